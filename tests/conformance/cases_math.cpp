// Unary math against libm in double: transcendentals over their useful domains (with NaN and
// infinities mixed in), exact ops (abs, neg, floor, ceil) exactly, integer abs/neg with wrapping.
#include <cmath>
#include <limits>

#include "tests/conformance/cases.h"
#include "tests/conformance/kernel_helpers.h"

namespace monotile::conformance {
namespace {

using namespace monotile::dsl;  // NOLINT
using enum ScalarType;

struct MathOp {
  const char* name;
  UnaryOp op;
  double (*ref)(double);
  double lo, hi;  // input domain
  bool exact = false;
};

double rsqrt_ref(double x) { return 1.0 / std::sqrt(x); }
double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
double softplus_ref(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }
double neg_ref(double x) { return -x; }
double abs_ref(double x) { return std::fabs(x); }
double exp_ref(double x) { return std::exp(x); }
double exp2_ref(double x) { return std::exp2(x); }
double log_ref(double x) { return std::log(x); }
double log2_ref(double x) { return std::log2(x); }
double sqrt_ref(double x) { return std::sqrt(x); }
double sin_ref(double x) { return std::sin(x); }
double cos_ref(double x) { return std::cos(x); }
double tanh_ref(double x) { return std::tanh(x); }
double erf_ref(double x) { return std::erf(x); }
double floor_ref(double x) { return std::floor(x); }
double ceil_ref(double x) { return std::ceil(x); }

}  // namespace

std::vector<Case> math_cases() {
  const std::vector<MathOp> ops = {
      {"exp", [](Value x) { return exp(x); }, exp_ref, -10, 10},
      {"exp2", [](Value x) { return exp2(x); }, exp2_ref, -10, 10},
      {"log", [](Value x) { return log(x); }, log_ref, 1e-3, 100},
      {"log2", [](Value x) { return log2(x); }, log2_ref, 1e-3, 100},
      {"sqrt", [](Value x) { return sqrt(x); }, sqrt_ref, 0, 100},
      {"rsqrt", [](Value x) { return rsqrt(x); }, rsqrt_ref, 1e-2, 100},
      {"sin", [](Value x) { return sin(x); }, sin_ref, -6, 6},
      {"cos", [](Value x) { return cos(x); }, cos_ref, -6, 6},
      {"tanh", [](Value x) { return tanh(x); }, tanh_ref, -6, 6},
      {"sigmoid", [](Value x) { return sigmoid(x); }, sigmoid_ref, -12, 12},
      {"softplus", [](Value x) { return softplus(x); }, softplus_ref, -20, 40},
      {"erf", [](Value x) { return erf(x); }, erf_ref, -3, 3},
      {"abs", [](Value x) { return abs(x); }, abs_ref, -8, 8, true},
      {"neg", [](Value x) { return -x; }, neg_ref, -8, 8, true},
      {"floor", [](Value x) { return floor(x); }, floor_ref, -8, 8, true},
      {"ceil", [](Value x) { return ceil(x); }, ceil_ref, -8, 8, true},
  };
  std::vector<Case> cases;
  for (const MathOp& op : ops) {
    for (ScalarType dtype : {kF32, kF16, kBf16, kF64}) {
      for (std::vector<int64_t> shape : {std::vector<int64_t>{128}, std::vector<int64_t>{32, 64}}) {
        ElementwiseSpec spec;
        spec.op = op.name, spec.in = dtype, spec.out = dtype, spec.shape = shape;
        spec.generate_a = with_specials(uniform(op.lo, op.hi), 0.05);
        spec.float_unary = op.ref;
        if (op.exact) spec.tolerance = Tolerance::exact();
        cases.push_back(unary_case(spec, op.op));
      }
    }
  }
  // f32 sigmoid down into the subnormals (x < -87.3; e^-104 rounds to the least one), held to a few
  // subnormal steps: 1 / (1 + e^-x) is zero once e^-x overflows (x < -88.7), and a reciprocal that
  // flushed subnormal results would give zero sooner; either misses by the result itself.
  {
    ElementwiseSpec spec;
    spec.op = "sigmoid_tails", spec.in = kF32, spec.out = kF32, spec.shape = {256};
    spec.generate_a = uniform(-104, 0);
    spec.float_unary = sigmoid_ref;
    spec.tolerance = Tolerance{.abs = 1e-44, .rel = 1e-5};
    cases.push_back(unary_case(spec, [](Value x) { return sigmoid(x); }));
  }
  for (ScalarType dtype : {kI32, kI64, kI8}) {
    ElementwiseSpec spec;
    spec.in = dtype, spec.out = dtype, spec.shape = {64, 32};
    spec.generate_a = dtype == kI8 ? integers(-128, 127)
                      : dtype == kI32 ? integers(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max())
                                      : integers(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    spec.op = "abs";
    spec.int_unary = [](int64_t x) { return static_cast<int64_t>(x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x)); };
    cases.push_back(unary_case(spec, [](Value x) { return abs(x); }));
    spec.op = "neg";
    spec.int_unary = [](int64_t x) { return static_cast<int64_t>(0 - static_cast<uint64_t>(x)); };
    cases.push_back(unary_case(spec, [](Value x) { return -x; }));
    spec.op = "not";
    spec.int_unary = [](int64_t x) { return ~x; };
    cases.push_back(unary_case(spec, [](Value x) { return ~x; }));
  }
  return cases;
}

}  // namespace monotile::conformance
