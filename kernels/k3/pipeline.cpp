#include "kernels/k3/pipeline.h"

#include <algorithm>

#include "dsl/dsl.h"
#include "support/check.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

std::vector<Value> pipelined_steps(int ahead, const Value& steps, bool exact,
                                   std::vector<Value> state, const PipelineLoad& load,
                                   const PipelineConsume& consume) {
  MT_CHECK(ahead >= 1, "pipelined_steps: ahead is at least 1");
  const auto fixed = static_cast<int64_t>(state.size());
  const int slots = ahead + 1;
  int64_t width = -1;  // the values a step's loads return
  for (int s = 0; s < slots; ++s) {
    std::vector<Value> loaded = load(full({}, s, i32));
    MT_CHECK(width < 0 || static_cast<int64_t>(loaded.size()) == width,
             "pipelined_steps: every load returns as many values");
    width = static_cast<int64_t>(loaded.size());
    state.insert(state.end(), loaded.begin(), loaded.end());
  }
  std::vector<Value> last =
      range_carrying(0, steps, slots, state, [&](Value i0, const std::vector<Value>& carried) {
        std::vector<Value> out = carried;
        for (int s = 0; s < slots; ++s) {
          auto i = i0 + s;
          const int64_t at = fixed + width * s;
          const std::vector<Value> pending(out.begin() + at, out.begin() + at + width);
          std::vector<Value> now(out.begin(), out.begin() + fixed);
          std::vector<Value> after;
          if (exact) {
            after = consume(i, s, now, pending);
          } else {
            after = if_(
                i < steps, [&] { return consume(i, s, now, pending); }, [&] { return now; });
          }
          std::copy(after.begin(), after.end(), out.begin());
          std::vector<Value> next = load(i + slots);
          std::copy(next.begin(), next.end(), out.begin() + at);
        }
        return out;
      });
  last.resize(fixed);  // the state; the slots past the last step are dropped
  return last;
}

}  // namespace monotile::kernels::k3
