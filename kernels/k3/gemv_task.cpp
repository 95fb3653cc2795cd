#include "kernels/k3/gemv_task.h"

#include <algorithm>

#include "dsl/dsl.h"
#include "kernels/k3/build_support.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

int64_t gemv_padded_tokens(int tokens) { return std::max<int64_t>(8, pow2_at_least(tokens)); }

namespace {

// The loop over K from k_first (a multiple of the step) to k_end.
Value gemv_loop(const GemvTask& g, const Value& rows, const Value& row_ok, const Operand& k_first,
                const Operand& k_end) {
  const int64_t padded = gemv_padded_tokens(g.tokens);
  auto ms = arange(0, padded);
  auto m_ok = ms < g.tokens;
  return range(k_first, k_end, g.step, zeros({g.rows, padded}, f32), [&](Value k0, Value acc) {
    auto ks = k0 + arange(0, g.step);
    auto w = load(g.w + col(rows).to(i64) * g.k + row(ks), col(row_ok), {.cache = Cache::streaming});
    auto xs = load(g.x + col(ms) * g.k + row(ks), col(m_ok));
    return dot(w, trans(xs), acc);
  });
}

}  // namespace

void prefetch_row_heads(const Value& first, const Value& rows, int64_t max_rows, int64_t row_elements, int64_t count,
                        int element_bytes) {
  constexpr int kChunk = 256;
  const int64_t line = 128 / element_bytes;
  const int64_t lines = (count + line - 1) / line;
  range(0, static_cast<int>(max_rows * lines), kChunk, [&](Value i0) {
    auto i = i0 + arange(0, kChunk);
    auto r = i / static_cast<int>(lines);
    prefetch(first + r.to(i64) * row_elements + (i % static_cast<int>(lines)).to(i64) * line,
             (r < rows) & (i < max_rows * lines));
  });
}

Value gemv_rows(const GemvTask& g, const Value& rows, const Value& row_ok) { return gemv_loop(g, rows, row_ok, 0, g.k); }

Value gemv_rows_span(const GemvTask& g, const Value& rows, const Value& row_ok, const Value& k_first,
                     const Value& k_end) {
  return gemv_loop(g, rows, row_ok, k_first, k_end);
}

Value gemv_task(const GemvTask& g, const Value& task, int64_t n) {
  auto rows = task * g.rows + arange(0, g.rows);
  return gemv_rows(g, rows, rows < n);
}

}  // namespace monotile::kernels::k3
