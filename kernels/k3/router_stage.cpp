#include "kernels/k3/router_stage.h"

#include <limits>
#include <vector>

#include "dsl/dsl.h"
#include "kernels/k3/build_support.h"
#include "kernels/k3/gemv_task.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

constexpr int64_t kTopkChunk = 128;  // keys a warp holds (4 a lane): a chunk's network never leaves the warp

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
  const int row_tasks = (experts + gemv_rows - 1) / gemv_rows;
  const int steps = hidden / gemv_step;
  int splits = 1;
  for (int d = 1; d <= steps; ++d) {
    if (steps % d == 0 && row_tasks * d <= kRouterPrograms) splits = d;
  }
  return splits;
}

void router_rows(const RouterRows& r, const HandoffContext& hc) {
  const int row_tasks = (r.experts + r.gemv_rows - 1) / r.gemv_rows;
  const int splits = router_splits(r.experts, r.hidden, r.gemv_rows, r.gemv_step);
  const int tasks = row_tasks * splits;
  const int64_t k_len = r.hidden / splits;
  const GemvTask gemv{.w = r.w_gate, .x = r.y, .k = r.hidden, .tokens = r.tokens, .rows = r.gemv_rows,
                      .step = r.gemv_step};
  if_(program_id(0) < tasks, [&] { wait_flag(r.y_flag, kRouterInputRegion, full({}, 0, i32), hc); });
  range(program_id(0), tasks, num_programs(0), [&](Value task) {
    auto split = task / row_tasks;
    auto experts = task % row_tasks * r.gemv_rows + arange(0, r.gemv_rows);
    auto ts = arange(0, gemv_padded_tokens(r.tokens));
    auto ok = experts < r.experts;
    auto k_first = split * static_cast<int>(k_len);
    auto acc = gemv_rows_span(gemv, experts, ok, k_first, k_first + static_cast<int>(k_len));
    store(r.logits + (split * r.tokens + row(ts)) * r.experts + col(experts), acc, col(ok) & row(ts < r.tokens));
    arrive(r.counter, tasks, r.flag, hc);
  });
  r.clock.tick(K2ClockPoint::kLogits);
  // Row t's logits at `at` (i32 tile): its partials summed in split order (every load in flight at
  // once), so that every program that reads a logit gets the same bits.
  auto logits_at = [&](const Value& t, const Value& at, const Value& ok) {
    std::vector<Value> parts;
    for (int s = 0; s < splits; ++s) parts.push_back(load(r.logits + (s * r.tokens + t) * r.experts + at, ok));
    Value total = parts[0];
    for (int s = 1; s < splits; ++s) total = total + parts[s];
    return total;
  };

  const float inf = std::numeric_limits<float>::infinity();
  range(program_id(0), r.tokens, num_programs(0), [&](Value t) {
    wait_flag(r.flag, kRouterLogitsRegion, t, hc);
    r.clock.tick_if(t == program_id(0), K2ClockPoint::kRouteReady);
    auto es = arange(0, pow2_at_least(r.experts));
    auto real = es < r.experts;
    auto score = sigmoid(logits_at(t, es, real));
    auto key = score + load(r.bias + es, real);
    // NaN ranks last (the DSL's top-k puts it first); padding never ranks above a real expert. A
    // top-k that is no tile size (6, 12) takes the next power of two: with ties to the lower id its
    // first top_k are the top-k's, and the slots past them are masked off the sum and the stores.
    const int picks = static_cast<int>(pow2_at_least(r.top_k));
    auto chosen = router_topk(where(real & (key == key), key, -inf), pow2_at_least(r.experts), picks);
    r.clock.tick_if(t == program_id(0), K2ClockPoint::kTopk);
    auto slots = arange(0, picks);
    auto kept = slots < r.top_k;
    auto picked = sigmoid(logits_at(t, chosen.indices, kept & (chosen.indices < r.experts)));
    auto weights = where(kept & (picked == picked), picked, 0.0f);
    if (r.renormalize) {
      auto total = sum(weights);
      weights = where(total > 0.0f, weights / total, 0.0f);
    }
    store(r.experts_out + t * r.top_k + slots, chosen.indices, kept);
    store(r.weights_out + t * r.top_k + slots, weights * r.scaling, kept);
    arrive(r.route_counter, r.tokens, r.route_flag, hc);
  });
}

}  // namespace monotile::kernels::k3
