// The gated RMSNorm on the CPU interpreter against a float64 reference: fresh random bf16 inputs,
// the output poisoned with NaN first (an unwritten element fails), a bf16 tolerance (the kernel
// differs from the exact value by f32 arithmetic and one bf16 rounding). Exit 0 when every element
// is within tolerance, 1 otherwise. Run it after each change to the kernel, before any GPU.
#include <monotile/dsl/dsl.h>
#include <monotile/dsl/interp/float16.h>
#include <monotile/dsl/interp/interpreter.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace monotile::dsl;  // NOLINT

Program gated_rms_norm(int hidden, float eps);  // gated_rms_norm.cpp

namespace {

// The float64 reference, written from the formula, not from the kernel.
std::vector<double> reference(const std::vector<double>& x, const std::vector<double>& g,
                              const std::vector<double>& w, int rows, int hidden, double eps) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    double squares = 0;
    for (int c = 0; c < hidden; ++c) squares += x[r * hidden + c] * x[r * hidden + c];
    const double rstd = 1.0 / std::sqrt(squares / hidden + eps);
    for (int c = 0; c < hidden; ++c) {
      const double gate = 1.0 / (1.0 + std::exp(-g[r * hidden + c]));
      y[r * hidden + c] = x[r * hidden + c] * rstd * w[c] * gate;
    }
  }
  return y;
}

// Runs the kernel for `rows` rows of `hidden` on the interpreter; the number of bad elements.
int check(int rows, int hidden, float eps, std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, 2.0);
  std::vector<uint16_t> x(rows * hidden), g(rows * hidden), w(hidden),
      y(rows * hidden, 0xffff);  // y: NaN
  std::vector<double> xd(x.size()), gd(g.size()), wd(w.size());
  auto fill = [&](std::vector<uint16_t>& bits, std::vector<double>& values, double mean) {
    for (size_t i = 0; i < bits.size(); ++i) {
      bits[i] = interp::bf16_bits_from_double(mean + normal(rng));
      values[i] = interp::bf16_bits_to_double(bits[i]);  // the reference sees the same bf16 inputs
    }
  };
  fill(x, xd, 0.0);
  fill(g, gd, 0.0);
  fill(w, wd, 1.0);

  interp::InterpretOptions options;  // the interpreter checks every access against these buffers
  options.allocations = {{x.data(), x.size() * 2, "x"},
                         {g.data(), g.size() * 2, "g"},
                         {w.data(), w.size() * 2, "w"},
                         {y.data(), y.size() * 2, "y"}};
  const std::vector<interp::ArgValue> args = {
      interp::ArgValue::pointer(x.data(), ScalarType::kBf16),
      interp::ArgValue::pointer(g.data(), ScalarType::kBf16),
      interp::ArgValue::pointer(w.data(), ScalarType::kBf16),
      interp::ArgValue::pointer(y.data(), ScalarType::kBf16)};
  const absl::Status run =
      interp::interpret(gated_rms_norm(hidden, eps), {rows, 1, 1}, args, options);
  if (!run.ok()) {
    std::printf("hidden %d: the interpreter refused: %s\n", hidden,
                std::string(run.message()).c_str());
    return 1;
  }
  const std::vector<double> want = reference(xd, gd, wd, rows, hidden, eps);
  int bad = 0;
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double got = interp::bf16_bits_to_double(y[i]);
    const double error = std::fabs(got - want[i]);
    worst = std::max(worst, error / (1.0 + std::fabs(want[i])));
    if (!(error <= 1e-2 + 1e-2 * std::fabs(want[i]))) {  // NaN never passes
      if (bad++ < 5) std::printf("  y[%zu] = %g, float64 says %g\n", i, got, want[i]);
    }
  }
  std::printf("gated_rms_norm %d x %d: %s (worst relative error %.2e)\n", rows, hidden,
              bad == 0 ? "matches float64" : "WRONG", worst);
  return bad;
}

}  // namespace

int main() {
  // Inputs are drawn from MONOTILE_TEST_SEED (the test suite's variable) or a fixed default, so
  // every run of one seed says the same; set it to draw other inputs, or to replay a failure.
  const char* text = std::getenv("MONOTILE_TEST_SEED");
  const unsigned seed =
      text != nullptr ? static_cast<unsigned>(std::strtoul(text, nullptr, 0)) : 20261204u;
  std::printf("seed %u (MONOTILE_TEST_SEED=%u replays it)\n", seed, seed);
  std::mt19937 rng(seed);
  int bad = 0;
  bad += check(6, 128, 1e-5f, rng);
  bad += check(2, 7168, 1e-6f, rng);
  return bad == 0 ? 0 : 1;
}
