#include "kernels/k3/attn_res_stage.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "dsl/dsl.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

constexpr int kS = kAttnResSources;
constexpr int kRows = 16;  // per-row control words
constexpr int32_t kRegion = 1;  // K1Region::kAttnRes in health records

}  // namespace

int attn_res_chunk(int hidden, int tokens) {
  int largest = 0;
  for (int chunk = 16; chunk <= 1024; chunk *= 2) {
    if (hidden % chunk == 0) largest = chunk;
  }
  for (int chunk = kAttnResMinChunk; chunk <= largest; chunk *= 2) {
    if (hidden % chunk == 0 && int64_t{tokens} * (hidden / chunk) <= kAttnResTasks) return chunk;
  }
  return largest;
}

int attn_res_row_span(int hidden) {
  int most = 1;
  for (int tokens = 1; tokens <= kRows; ++tokens) most = std::max(most, hidden / attn_res_chunk(hidden, tokens));
  return arrival_span(most);
}

Value attn_res_done_flag(const AttnResRows& r) { return r.flags + kRows; }

namespace {

int chunk_of(const AttnResRows& r) { return r.chunk != 0 ? r.chunk : attn_res_chunk(r.hidden, r.tokens); }

// The tile rows (of `ss`, 0..15) that hold a block source, and those that hold any source (the
// prefix's row nblocks included). The compile-time bound leaves the rows past it out of the code.
Value block_rows(const AttnResRows& r, const Value& ss) { return (ss < r.max_blocks) & (ss < r.nblocks); }
Value source_rows(const AttnResRows& r, const Value& ss) { return (ss <= r.max_blocks) & (ss <= r.nblocks); }

// The mix's coefficients of row t [16] from every chunk's partials (plain loads, after the row's
// flag), summed in chunk order so that every task of the row gets the same bits.
Value mix_coefficients(const AttnResRows& r, const Value& t, int chunks) {
  auto ss = arange(0, kS);
  auto row_partials = r.partials + t * chunks * kAttnResPartials;
  std::vector<Value> gs, ds;
  for (int k = 0; k < chunks; ++k) {  // every load in flight at once
    gs.push_back(load(row_partials + k * kAttnResPartials + col(ss) * kS + row(ss)));
    ds.push_back(load(row_partials + k * kAttnResPartials + kS * kS + ss));
  }
  Value g = gs[0], d = ds[0];
  for (int k = 1; k < chunks; ++k) {
    g = g + gs[k];
    d = d + ds[k];
  }
  auto real = source_rows(r, ss);
  auto diagonal = sum(where(col(ss) == row(ss), g, 0.0f), 1);
  // With no block the prefix alone mixes, at weight 1 whatever its logit.
  auto logits = where(real, d * rsqrt(diagonal / float(r.hidden) + r.eps), -3.0e38f);
  auto e = where(real, where(r.nblocks == 0, 1.0f, exp(logits - max(logits))), 0.0f);
  auto weights = e / sum(e);
  // The mix's sum of squares: w^T G w.
  auto squares = sum(sum(col(weights) * g * row(weights), 1));
  return weights * rsqrt(squares / float(r.hidden) + r.out_eps);
}

// The chunk's sources as [16, chunk]: the blocks, `prefix` (the prefix row's values), zero rows.
Value source_tile(const AttnResRows& r, const Value& t, const Value& cols, const Value& prefix) {
  auto ss = arange(0, kS);
  auto rows = minimum(ss, r.nblocks);  // the prefix row and the padding address a real row...
  auto tile = load(r.blocks + t * r.token_stride + col(rows).to(i64) * r.block_stride + row(cols),
                   col(block_rows(r, ss)));  // ...that the mask leaves unread
  return where(col(ss == r.nblocks), row(prefix), tile);
}

// A task's first half: the prefix updated and stored, the tile, the partials; returns the tile.
// With `sources` (the linear form), the tile's rows times out_norm are stored too, and the task
// arrives on the sources' counter instead of its row's.
Value first_half(const AttnResRows& r, const HandoffContext& hc, const Value& task, bool first,
                 const AttnResSources* sources = nullptr) {
  const int chunk = chunk_of(r), chunks = r.hidden / chunk;
  auto ss = arange(0, kS);
  auto t = task / chunks, c = task % chunks;
  auto cols = c * chunk + arange(0, chunk);
  // A restarting prefix is not read.
  Value prefix = r.reset ? load(r.prefix + t * r.hidden + cols, *r.reset == 0) : load(r.prefix + t * r.hidden + cols);
  if (r.delta) {
    if (r.delta_flag) wait_flag(*r.delta_flag, kDeltaRegion, t, hc);
    if (first) r.clock.tick(K2ClockPoint::kAttnResDelta);
    auto delta = load(*r.delta + t * r.hidden + cols);
    auto sum = (prefix.to(f32) + delta.to(f32)).to(bf16);
    prefix = r.reset ? where(*r.reset != 0, delta, sum) : sum;
    store(r.prefix + t * r.hidden + cols, prefix);
  }
  auto v = source_tile(r, t, cols, prefix);
  if (r.write_index) {
    store(r.blocks + t * r.token_stride + r.write_index->to(i64) * r.block_stride + cols, prefix, *r.write_index >= 0);
  }
  auto weight = load(r.norm + cols).to(f32) * load(r.proj + cols).to(f32);
  auto gram = dot(v, trans(v));
  auto dots = sum(v.to(f32) * row(weight), 1);
  auto mine = r.partials + (t * chunks + c) * kAttnResPartials;
  store(mine + col(ss) * kS + row(ss), gram);
  store(mine + kS * kS + ss, dots);
  if (sources != nullptr) {
    auto scaled = (v.to(f32) * row(load(r.out_norm + cols).to(f32))).to(bf16);
    // Up to max_blocks: the rows past nblocks are zero (the tile's mask), and the GEMV reads them.
    store(sources->rows + col(ss * sources->block + t) * r.hidden + row(cols), scaled, col(ss <= r.max_blocks));
    arrive(sources->counter, r.tokens * chunks, sources->flag, hc);
  } else {
    arrive(r.counters + t, chunks, r.flags + t, hc, attn_res_row_span(r.hidden));
  }
  if (first) r.clock.tick(K2ClockPoint::kAttnResHalf);
  return v;
}

}  // namespace

void attn_res_rows(const AttnResRows& r, const HandoffContext& hc, const std::function<void()>& while_waiting) {
  const int chunk = chunk_of(r), chunks = r.hidden / chunk;
  const int tasks = r.tokens * chunks;
  auto offsets = arange(0, chunk);
  auto first_half = [&](const Value& task, bool first) { return k3::first_half(r, hc, task, first); };
  // Second half: the chunk of the row, mixed, normalized and rounded. `tile` is the first half's, or
  // empty to read it again (after the flag, which orders the prefix's update before it).
  auto second_half = [&](const Value& task, std::optional<Value> tile, bool first) {
    auto t = task / chunks, c = task % chunks;
    auto cols = c * chunk + offsets;
    auto out_norm = load(r.out_norm + cols).to(f32);
    wait_flag(r.flags + t, kRegion, t, hc);
    if (first) r.clock.tick(K2ClockPoint::kAttnResRow);
    if (!tile) tile = source_tile(r, t, cols, load(r.prefix + t * r.hidden + cols));
    auto a = mix_coefficients(r, t, chunks);
    auto mixed = sum(col(a) * tile->to(f32), 0);
    store(r.out + t * r.hidden + cols, (mixed * out_norm).to(bf16));
    // One counter per width: each launch adds exactly its width's span to it.
    arrive(r.counters + kRows + (r.tokens - 1), tasks, attn_res_done_flag(r), hc);
  };

  auto run_while_waiting = [&] {
    if (while_waiting) while_waiting();
  };
  if_(num_programs(0) >= tasks, [&] {
    if (while_waiting) {
      if_(program_id(0) < tasks, [&] {
        auto tile = first_half(program_id(0), true);
        while_waiting();
        second_half(program_id(0), tile, true);
      }, run_while_waiting);
    } else {
      if_(program_id(0) < tasks, [&] { second_half(program_id(0), first_half(program_id(0), true), true); });
    }
  }, [&] {
    range(program_id(0), tasks, num_programs(0), [&](Value task) { first_half(task, false); });
    run_while_waiting();
    range(program_id(0), tasks, num_programs(0), [&](Value task) { second_half(task, std::nullopt, false); });
  });
}

void attn_res_sources(const AttnResRows& r, const HandoffContext& hc, const AttnResSources& sources) {
  const int chunks = r.hidden / chunk_of(r);
  auto worker = sources.from_last ? num_programs(0) - 1 - program_id(0) : program_id(0);
  range(worker, r.tokens * chunks, num_programs(0), [&](Value task) { first_half(r, hc, task, false, &sources); });
}

void attn_res_mix(const AttnResRows& r, const HandoffContext& hc, const Value& worker, const Value& workers,
                  const AttnResMix& mix) {
  const int chunks = r.hidden / chunk_of(r);
  auto ss = arange(0, kS);
  range(worker, r.tokens, workers, [&](Value t) {
    store(mix.coefficients + ss * mix.source_stride + t, mix_coefficients(r, t, chunks), source_rows(r, ss));
    arrive(mix.counter, r.tokens, mix.flag, hc);
  });
}

}  // namespace monotile::kernels::k3
