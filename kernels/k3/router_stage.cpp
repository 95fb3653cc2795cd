#include "kernels/k3/router_stage.h"

#include <limits>

#include "dsl/dsl.h"
#include "kernels/k3/build_support.h"
#include "kernels/k3/gemv_task.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

void router_rows(const RouterRows& r, const HandoffContext& hc) {
  const int tasks = (r.experts + r.gemv_rows - 1) / r.gemv_rows;
  const GemvTask gemv{.w = r.w_gate, .x = r.y, .k = r.hidden, .tokens = r.tokens, .rows = r.gemv_rows,
                      .step = r.gemv_step};
  if_(program_id(0) < tasks, [&] { wait_flag(r.y_flag, kRouterInputRegion, full({}, 0, i32), hc); });
  range(program_id(0), tasks, num_programs(0), [&](Value task) {
    auto experts = task * r.gemv_rows + arange(0, r.gemv_rows);
    auto ts = arange(0, gemv_padded_tokens(r.tokens));
    auto acc = gemv_task(gemv, task, r.experts);
    store(r.logits + row(ts) * r.experts + col(experts), acc, col(experts < r.experts) & row(ts < r.tokens));
    arrive(r.counter, tasks, r.flag, hc);
  });

  const float inf = std::numeric_limits<float>::infinity();
  range(program_id(0), r.tokens, num_programs(0), [&](Value t) {
    wait_flag(r.flag, kRouterLogitsRegion, t, hc);
    auto es = arange(0, pow2_at_least(r.experts));
    auto real = es < r.experts;
    auto score = sigmoid(load(r.logits + t * r.experts + es, real));
    auto key = score + load(r.bias + es, real);
    // NaN ranks last (the DSL's top-k puts it first); padding never ranks above a real expert.
    auto chosen = topk(where(real & (key == key), key, -inf), r.top_k);
    auto picked = sigmoid(load(r.logits + t * r.experts + chosen.indices));
    auto weights = where(picked == picked, picked, 0.0f);
    if (r.renormalize) {
      auto total = sum(weights);
      weights = where(total > 0.0f, weights / total, 0.0f);
    }
    auto slots = arange(0, r.top_k);
    store(r.experts_out + t * r.top_k + slots, chosen.indices);
    store(r.weights_out + t * r.top_k + slots, weights * r.scaling);
    arrive(r.route_counter, r.tokens, r.route_flag, hc);
  });
}

}  // namespace monotile::kernels::k3
