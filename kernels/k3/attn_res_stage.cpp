#include "kernels/k3/attn_res_stage.h"

#include <vector>

#include "dsl/dsl.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

constexpr int kS = kAttnResSources;
constexpr int kRows = 16;  // per-row control words
constexpr int32_t kRegion = 1;  // K1Region::kAttnRes in health records

}  // namespace

int attn_res_chunk(int hidden) {
  for (int chunk = 1024; chunk >= 16; chunk /= 2) {
    if (hidden % chunk == 0) return chunk;
  }
  return 0;
}

Value attn_res_done_flag(const AttnResRows& r) { return r.flags + kRows; }

void attn_res_rows(const AttnResRows& r, const HandoffContext& hc) {
  const int chunk = attn_res_chunk(r.hidden), chunks = r.hidden / chunk, sources = r.nblocks + 1;
  const int tasks = r.tokens * chunks;
  auto ss = arange(0, kS);
  auto offsets = arange(0, chunk);
  // The chunk's sources as [16, chunk] (blocks, the prefix, zero rows), read from memory.
  auto source_tile = [&](const Value& t, const Value& cols) {
    auto block_rows = minimum(ss, sources - 1);  // the prefix row and the padding read a real row...
    auto tile = load(r.blocks + t * r.token_stride + col(block_rows).to(i64) * r.block_stride + row(cols),
                     col(ss < r.nblocks));       // ...that the mask leaves unread
    auto prefix = load(r.prefix + t * r.hidden + cols);
    return where(col(ss == r.nblocks), row(prefix), tile);
  };

  // Loop 1: partials, and per row the coefficients.
  range(program_id(0), tasks, num_programs(0), [&](Value task) {
    auto t = task / chunks, c = task % chunks;
    auto cols = c * chunk + offsets;
    if (r.delta) {
      auto updated = (load(r.prefix + t * r.hidden + cols).to(f32) + load(*r.delta + t * r.hidden + cols).to(f32)).to(bf16);
      store(r.prefix + t * r.hidden + cols, updated);
      barrier();  // the tile below re-reads the updated prefix
    }
    auto v = source_tile(t, cols);
    if (r.write_index >= 0) {
      store(r.blocks + t * r.token_stride + r.write_index * r.block_stride + cols, load(r.prefix + t * r.hidden + cols));
    }
    auto weight = load(r.norm + cols).to(f32) * load(r.proj + cols).to(f32);
    auto gram = dot(v, trans(v));
    auto dots = sum(v.to(f32) * row(weight), 1);
    auto mine = r.partials + (t * chunks + c) * kAttnResPartials;
    store(mine + col(ss) * kS + row(ss), gram);
    store(mine + kS * kS + ss, dots);
    fence(Order::release, Scope::gpu);
    barrier();
    auto before = atomic_add(r.counters + t, 1, Scope::gpu, Order::acq_rel);
    if_((before + 1) % chunks == 0, [&] {
      fence(Order::acquire, Scope::gpu);
      // Every chunk's partials loaded at once (plain loads, which the acquire covers), then summed
      // in chunk order.
      auto row_partials = r.partials + t * chunks * kAttnResPartials;
      std::vector<Value> gs, ds;
      for (int k = 0; k < chunks; ++k) {
        gs.push_back(load(row_partials + k * kAttnResPartials + col(ss) * kS + row(ss)));
        ds.push_back(load(row_partials + k * kAttnResPartials + kS * kS + ss));
      }
      Value g = gs[0], d = ds[0];
      for (int k = 1; k < chunks; ++k) {
        g = g + gs[k];
        d = d + ds[k];
      }
      auto real = ss < sources;
      auto diagonal = sum(where(col(ss) == row(ss), g, 0.0f), 1);
      Value e;
      if (r.nblocks == 0) {
        e = where(real, 1.0f, 0.0f);
      } else {
        auto logits = where(real, d * rsqrt(diagonal / float(r.hidden) + r.eps), -3.0e38f);
        e = where(real, exp(logits - max(logits)), 0.0f);
      }
      auto weights = e / sum(e);
      // The mix's sum of squares: w^T G w.
      auto squares = sum(sum(col(weights) * g * row(weights), 1));
      auto coefficients = weights * rsqrt(squares / float(r.hidden) + r.out_eps);
      store(r.coefficients + t * kS + ss, coefficients);
      publish(r.flags + t, hc);
    });
  });

  // Loop 2: the rows, normalized and rounded.
  range(program_id(0), tasks, num_programs(0), [&](Value task) {
    auto t = task / chunks, c = task % chunks;
    auto cols = c * chunk + offsets;
    wait_flag(r.flags + t, kRegion, t, hc);
    auto a = load(r.coefficients + t * kS + ss);
    auto mixed = sum(col(a) * source_tile(t, cols).to(f32), 0);
    store(r.out + t * r.hidden + cols, (mixed * load(r.out_norm + cols).to(f32)).to(bf16));
    // One counter per width: each launch adds exactly its width's task count to it.
    arrive(r.counters + kRows + (r.tokens - 1), tasks, attn_res_done_flag(r), hc);
  });
}

}  // namespace monotile::kernels::k3
