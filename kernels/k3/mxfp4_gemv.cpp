#include "kernels/k3/mxfp4_gemv.h"

#include <cmath>
#include <limits>

#include "dsl/dsl.h"
#include "kernels/k3/gemv_task.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

constexpr int kGroup = 32;

// The e2m1 magnitudes {0, 0.5, 1, 1.5, 2, 3, 4, 6} of codes 0..7, by arithmetic (no table).
Value e2m1_magnitude(const Value& m) {
  auto f = m.to(f32);
  return where(m < 4, f * 0.5f, where(m < 6, f - 2.0f, f * 2.0f - 8.0f));
}

// 2^(code - 127) built from its bits (exact; code 0 is the subnormal 2^-127, 255 is NaN).
Value e8m0_value(const Value& code) {
  auto normal = (code << 23).bitcast(f32);
  return where(code == 0, std::ldexp(1.0f, -127), where(code == 255, std::numeric_limits<float>::quiet_NaN(), normal));
}

}  // namespace

Value mxfp4_weights(const Mxfp4Gemv& g, const Value& rows, const Value& row_ok, const Value& k0) {
  auto ks = k0 + arange(0, g.step);
  auto base = col(rows).to(i64);
  // Each byte is read by the two lanes of its elements, each scale by its group's 32.
  auto bytes = load(g.packed + base * (g.k / 2) + row(ks / 2), col(row_ok), {.cache = Cache::streaming}).to(i32);
  auto codes = where(row(ks % 2 == 0), bytes & 15, bytes >> 4);
  auto magnitude = e2m1_magnitude(codes & 7);
  auto value = where((codes & 8) != 0, -magnitude, magnitude);
  auto scale = e8m0_value(load(g.scales + base * (g.k / kGroup) + row(ks / kGroup), col(row_ok)).to(i32));
  return (value * scale).to(bf16);
}

int mxfp4_step(int64_t k, int max_step) {
  for (int step = max_step; step >= kGroup; step /= 2) {
    if (k % step == 0) return step;
  }
  return 0;
}

int looped_step(int64_t k, int max_step, int min_steps) {
  int step = mxfp4_step(k, max_step);
  while (step > kGroup && k / step < min_steps) step /= 2;
  return step;
}

Value mxfp4_gemv_rows(const Mxfp4Gemv& g, const Value& rows, const Value& row_ok) {
  const int64_t padded = gemv_padded_tokens(g.tokens);
  auto ms = arange(0, padded);
  auto m_ok = ms < g.tokens;
  return range(0, g.k, g.step, zeros({g.rows, padded}, f32), [&](Value k0, Value acc) {
    auto w = mxfp4_weights(g, rows, row_ok, k0);
    auto xs = load(g.x + col(ms) * g.k + row(k0 + arange(0, g.step)), col(m_ok));
    return dot(w, trans(xs), acc);
  });
}

Value mxfp4_gemv_task(const Mxfp4Gemv& g, const Value& task, int64_t n) {
  auto rows = task * g.rows + arange(0, g.rows);
  return mxfp4_gemv_rows(g, rows, rows < n);
}

Program mxfp4_gemv_program(int64_t n, int64_t k, int tokens, int num_warps, int step) {
  Builder b("mxfp4_gemv", {.num_warps = num_warps});
  Mxfp4Gemv g{.packed = b.arg("packed", ptr(u8)),
              .scales = b.arg("scales", ptr(u8)),
              .x = b.arg("x", ptr(bf16)),
              .k = k,
              .tokens = tokens,
              .step = step};
  auto out = b.arg("out", ptr(f32));
  const int tasks = static_cast<int>((n + g.rows - 1) / g.rows);
  const int64_t padded = gemv_padded_tokens(tokens);
  range(program_id(0), tasks, num_programs(0), [&](Value task) {
    auto rows = task * g.rows + arange(0, g.rows);
    store(out + col(rows) * padded + row(arange(0, padded)), mxfp4_gemv_task(g, task, n), col(rows < n));
  });
  return b.finish();
}

}  // namespace monotile::kernels::k3
