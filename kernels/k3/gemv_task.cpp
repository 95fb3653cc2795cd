#include "kernels/k3/gemv_task.h"

#include <algorithm>

#include "dsl/dsl.h"
#include "kernels/k3/build_support.h"
#include "kernels/k3/pipeline.h"
#include "support/check.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

constexpr int64_t kRegisterTokens = 16;  // the A operand's M on every target's unit

// The loop over K from k_first (a multiple of the step) to k_end.
Value gemv_loop(const GemvTask& g, const Value& rows, const Value& row_ok, const Operand& k_first,
                const Operand& k_end) {
  const int64_t padded = gemv_padded_rows(g);
  auto ms = arange(0, padded);
  auto m_ok = g.sources > 0 ? (ms % g.block < g.tokens) & (ms / g.block < g.sources) : ms < g.tokens;
  return range(k_first, k_end, g.step, zeros({g.rows, padded}, f32), [&](Value k0, Value acc) {
    auto ks = k0 + arange(0, g.step);
    auto w = load(g.w + col(rows).to(i64) * g.k + row(ks), col(row_ok),
                  {.cache = Cache::streaming, .l2_fetch = g.l2_fetch});
    auto xs = load(g.x + col(ms) * g.k + row(ks), col(m_ok));
    return dot(w, trans(xs), acc);
  });
}

// GemvTask::ahead's loop over `steps` K steps (an i32 scalar) from k_first: x [16, step] A times
// W [rows, step] B. Both are read as i32 words of bf16 pairs and unpacked where the dot takes them
// (unpack_bf16 moves nothing there), so a step's W tile holds one register a pair. W's tile is
// loaded g.ahead steps before its dot (past the last step, the last step again: an L1 hit where a
// mask would be a branch); x's, the same for every warp, at its step (L1 hits after the first
// warp's).
Value gemv_register_loop(const GemvTask& g, const Value& rows, const Value& row_ok, const Value& k_first,
                         const Value& steps, bool exact) {
  MT_CHECK(g.tokens <= kRegisterTokens && g.sources == 0, "GemvTask: at most 16 tokens, no sources");
  const int64_t row_words = g.k / 2;
  const int step_words = g.step / 2;
  auto w_words = bitcast(g.w, ptr(i32));
  auto x_words = bitcast(g.x, ptr(i32));
  auto ms = arange(0, kRegisterTokens);
  auto words = [&](const Value& step) { return k_first / 2 + step * step_words + arange(0, step_words); };
  auto last = steps - 1;
  auto sums = pipelined_steps(
      g.ahead, steps, exact, {zeros({kRegisterTokens, g.rows}, f32)},
      [&](const Value& i) {
        return std::vector<Value>{load(w_words + col(rows).to(i64) * row_words + row(words(minimum(i, last))),
                                       col(row_ok), {.cache = Cache::streaming, .l2_fetch = g.l2_fetch})};
      },
      [&](const Value& i, int, const std::vector<Value>& acc, const std::vector<Value>& w) {
        auto xs = load(x_words + col(ms) * row_words + row(words(i)), col(ms < g.tokens));
        return std::vector<Value>{dot(unpack_bf16(xs), trans(unpack_bf16(w[0])), acc[0])};
      });
  return trans(sums[0]);
}

}  // namespace

int64_t gemv_padded_tokens(int tokens, int ahead) {
  return ahead > 0 ? kRegisterTokens : std::max<int64_t>(8, pow2_at_least(tokens));
}

int64_t gemv_padded_rows(const GemvTask& g) {
  if (g.sources == 0) return gemv_padded_tokens(g.tokens, g.ahead);
  MT_CHECK(g.block >= g.tokens && pow2_at_least(g.block) == g.block, "GemvTask: a block is a power of two >= tokens");
  return std::max<int64_t>(8, pow2_at_least(g.sources) * g.block);
}

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

void prefetch_share(const Value& first, int64_t elements) {
  constexpr int kLineElements = 64;  // bf16 elements a 128-byte line
  constexpr int kChunk = 256;
  const int lines = static_cast<int>((elements + kLineElements - 1) / kLineElements);
  auto share = (lines + num_programs(0) - 1) / num_programs(0);
  auto line0 = program_id(0) * share;
  auto end = minimum(line0 + share, full({}, lines, i32));
  range(line0, end, kChunk, [&](Value i0) {
    auto i = i0 + arange(0, kChunk);
    prefetch(first + i.to(i64) * kLineElements, i < end);
  });
}

Value gemv_rows(const GemvTask& g, const Value& rows, const Value& row_ok) {
  if (g.ahead > 0) {
    const int64_t steps = g.k / g.step;
    return gemv_register_loop(g, rows, row_ok, full({}, 0, i32), full({}, static_cast<int32_t>(steps), i32),
                              steps % (g.ahead + 1) == 0);
  }
  return gemv_loop(g, rows, row_ok, 0, g.k);
}

Value gemv_rows_span(const GemvTask& g, const Value& rows, const Value& row_ok, const Value& k_first,
                     const Value& k_end) {
  if (g.ahead > 0) return gemv_register_loop(g, rows, row_ok, k_first, (k_end - k_first) / g.step, false);
  return gemv_loop(g, rows, row_ok, k_first, k_end);
}

Value gemv_task(const GemvTask& g, const Value& task, int64_t n) {
  auto rows = task * g.rows + arange(0, g.rows);
  return gemv_rows(g, rows, rows < n);
}

}  // namespace monotile::kernels::k3
