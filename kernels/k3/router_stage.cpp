#include "kernels/k3/router_stage.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "dsl/dsl.h"
#include "kernels/k3/build_support.h"
#include "kernels/k3/gemv_task.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

constexpr int64_t kTopkChunk = 128;  // keys a warp holds (4 a lane): a chunk's network never leaves the warp
// The largest [picks, candidates] tile the route picks its winners' ids from in registers (K3: 16 x 256).
constexpr int64_t kRouterPickElements = 4096;

}  // namespace

// Two rounds: each chunk's k largest (its network in its own warp's registers and shuffles), then
// the k largest of the chunks' candidates, whose positions keep the lower index first on ties (the
// chunks in index order, each sorted). K3's 896 experts take 28 + 28 steps instead of the 55 of one
// network over 1024 keys, 6 of which pass through shared memory between barriers.
Sorted router_topk(const Value& keys, int64_t n, int k) {
  if (n < 4 * kTopkChunk || (k & (k - 1)) != 0 || k > kTopkChunk / 4) return topk(keys, k);
  const int chunks = static_cast<int>(n / kTopkChunk), candidates = chunks * k;
  Sorted per_chunk = topk(reshape(keys, {chunks, kTopkChunk}), k);
  auto ids = reshape(per_chunk.indices + col(arange(0, chunks) * static_cast<int>(kTopkChunk)), {candidates});
  Sorted best = topk(reshape(per_chunk.values, {candidates}), k);
  // The winners' indices: a one-hot pick from the candidates' (no gather from registers).
  auto picked = sum(where(col(best.indices) == row(arange(0, candidates)), row(ids), 0), 1);
  return {best.values, picked};
}

int router_splits(int experts, int hidden, int gemv_rows, int gemv_step) {
  const int row_tasks = router_blocks(experts, gemv_rows);
  const int steps = hidden / gemv_step;
  int splits = 1;
  for (int d = 1; d <= steps; ++d) {
    if (steps % d == 0 && row_tasks * d <= kRouterPrograms) splits = d;
  }
  return splits;
}

int router_blocks(int experts, int gemv_rows) { return (experts + gemv_rows - 1) / gemv_rows; }

int router_block_candidates(int top_k, int gemv_rows) {
  return static_cast<int>(std::min<int64_t>(pow2_at_least(top_k), gemv_rows));
}

int router_candidates(int experts, int top_k, int gemv_rows) {
  return router_blocks(experts, gemv_rows) * router_block_candidates(top_k, gemv_rows);
}

int64_t router_scratch_floats(int experts, int hidden, int tokens, int top_k, int gemv_rows, int gemv_step) {
  return int64_t{router_splits(experts, hidden, gemv_rows, gemv_step) + 1} * tokens * experts +
         2 * int64_t{tokens} * router_candidates(experts, top_k, gemv_rows);
}

void router_rows(const RouterRows& r, const HandoffContext& hc) {
  const int row_tasks = router_blocks(r.experts, r.gemv_rows);
  const int splits = router_splits(r.experts, r.hidden, r.gemv_rows, r.gemv_step);
  const int tasks = row_tasks * splits;
  const int64_t k_len = r.hidden / splits;
  // A top-k that is no tile size (6, 12) takes the next power of two: with ties to the lower id its
  // first top_k are the top-k's, and the slots past them are masked off the sum and the stores.
  const int picks = static_cast<int>(pow2_at_least(r.top_k));
  const int per_block = router_block_candidates(r.top_k, r.gemv_rows), candidates = row_tasks * per_block;
  const int64_t padded = pow2_at_least(candidates);
  // Two forms (RouterRows::scores_ahead): the blocks store their scores [T, E] and each candidate as
  // a (key, id as f32) pair [T, C, 2], so that one load brings both; or (AMD) the candidates' keys
  // [T, C], then their ids [T, C], the weights' scores from the logits at the winners.
  const bool ahead = r.scores_ahead;
  auto scores = r.logits + int64_t{splits} * r.tokens * r.experts;
  auto pairs = scores + int64_t{r.tokens} * r.experts;
  auto candidate_keys = pairs, candidate_ids = pairs + int64_t{r.tokens} * candidates;
  const float inf = std::numeric_limits<float>::infinity();
  // The logits at `at` (i32 offsets into one slice): their partials summed in split order (every load
  // in flight at once).
  auto logits_at = [&](const Value& at, const Value& ok) {
    std::vector<Value> parts;
    for (int s = 0; s < splits; ++s) parts.push_back(load(r.logits + s * r.tokens * r.experts + at, ok));
    Value total = parts[0];
    for (int s = 1; s < splits; ++s) total = total + parts[s];
    return total;
  };
  // A block's candidates for every row, from its complete logits: its keys (NaN and padding -inf,
  // after every real key of the block), their top per_block by topk's order, or all of them in id
  // order where per_block is the whole block.
  auto hand_in_candidates = [&](const Value& block) {
    const int64_t rows_padded = pow2_at_least(r.tokens);
    auto ts = arange(0, rows_padded);
    auto experts = block * r.gemv_rows + arange(0, r.gemv_rows);
    auto real = experts < r.experts;
    auto ok = col(ts < r.tokens) & row(real);
    auto at = col(ts) * r.experts + row(experts);
    auto score = sigmoid(logits_at(at, ok));
    if (ahead) store(scores + at, score, ok);  // the weights' scores, read at the winners
    auto key = score + row(load(r.bias + experts, real));
    key = where(row(real) & (key == key), key, -inf);
    Value values = key, ids = broadcast_to(row(experts), {rows_padded, r.gemv_rows});
    if (per_block < r.gemv_rows) {
      Sorted top = topk(key, per_block);
      values = top.values;
      ids = top.indices + block * r.gemv_rows;
    }
    auto slots = col(ts) * candidates + row(block * per_block + arange(0, per_block));
    // ids below 2^24: exact as f32
    if (ahead) {
      auto stored = broadcast_to(col(ts < r.tokens), {rows_padded, per_block});
      store(pairs + join(slots * 2, slots * 2 + 1), join(values, ids.to(f32)), join(stored, stored));
    } else {
      store(candidate_keys + slots, values, col(ts < r.tokens));
      store(candidate_ids + slots, ids.to(f32), col(ts < r.tokens));
    }
  };

  const GemvTask gemv{.w = r.w_gate, .x = r.y, .k = r.hidden, .tokens = r.tokens, .rows = r.gemv_rows,
                      .step = r.gemv_step};
  if_(program_id(0) < tasks, [&] { wait_flag(r.y_flag, kRouterInputRegion, full({}, 0, i32), hc); });
  range(program_id(0), tasks, num_programs(0), [&](Value task) {
    auto split = task / row_tasks, block = task % row_tasks;
    auto experts = block * r.gemv_rows + arange(0, r.gemv_rows);
    auto ts = arange(0, gemv_padded_tokens(r.tokens));
    auto ok = experts < r.experts;
    auto k_first = split * static_cast<int>(k_len);
    auto acc = gemv_rows_span(gemv, experts, ok, k_first, k_first + static_cast<int>(k_len));
    store(r.logits + (split * r.tokens + row(ts)) * r.experts + col(experts), acc, col(ok) & row(ts < r.tokens));
    // The block's last slice (its acquire covers the others' partials) selects for the block.
    if_(count_arrival(r.block_counters + block, splits), [&] {
      hand_in_candidates(block);
      arrive(r.counter, row_tasks, r.flag, hc);
    });
  });
  r.clock.tick(K2ClockPoint::kLogits);

  range(program_id(0), r.tokens, num_programs(0), [&](Value t) {
    wait_flag(r.flag, kRouterLogitsRegion, t, hc);
    r.clock.tick_if(t == program_id(0), K2ClockPoint::kRouteReady);
    auto cs = arange(0, padded);
    auto real = cs < candidates;
    auto row_first = t * candidates;
    // The winners' ids: a one-hot pick from every candidate's (loaded with the keys) where that tile
    // is small, else a load at the winners' positions. Their scores: ahead, where the ids are
    // picked, from every candidate's, asked for before the sort (its steps cover that round trip),
    // else loaded at the winners' ids; otherwise from the logits at the winners' ids.
    const bool pick = int64_t{picks} * padded <= kRouterPickElements;
    Value keys, all, all_scores;
    if (ahead) {
      auto at = (row_first + cs) * 2;
      auto [pair_keys, pair_ids] = split(load(pairs + join(at, at + 1), join(real, real), -inf));
      keys = pair_keys;
      if (pick) all = where(real, pair_ids, 0.0f).to(i32);
      if (pick) all_scores = load(scores + t * r.experts + all, real & (all < r.experts), 0.0f);
    } else {
      keys = load(candidate_keys + row_first + cs, real, -inf);
    }
    auto chosen = router_topk(keys, padded, picks);
    r.clock.tick_if(t == program_id(0), K2ClockPoint::kTopk);
    auto slots = arange(0, picks);
    auto kept = slots < r.top_k;
    Value ids, picked;
    if (pick) {
      if (!ahead) all = load(candidate_ids + row_first + cs, real, 0.0f).to(i32);
      auto winner = col(chosen.indices) == row(cs);
      ids = sum(where(winner, row(all), 0), 1);
      if (ahead) picked = sum(where(winner, row(all_scores), 0.0f), 1);  // exact: the other terms are 0
    } else {
      auto at = ahead ? (row_first + chosen.indices) * 2 + 1 : row_first + chosen.indices;
      ids = load((ahead ? pairs : candidate_ids) + at, chosen.indices < candidates, 0.0f).to(i32);
    }
    auto ok = kept & (ids < r.experts);
    if (!ahead) picked = sigmoid(logits_at(t * r.experts + ids, ok));
    if (ahead && !pick) picked = load(scores + t * r.experts + ids, ok, 0.0f);
    auto weights = where(kept & (picked == picked), picked, 0.0f);
    if (r.renormalize) {
      auto total = sum(weights);
      weights = where(total > 0.0f, weights / total, 0.0f);
    }
    store(r.experts_out + t * r.top_k + slots, ids, kept);
    store(r.weights_out + t * r.top_k + slots, weights * r.scaling, kept);
    arrive(r.route_counter, r.tokens, r.route_flag, hc);
  });
}

}  // namespace monotile::kernels::k3
