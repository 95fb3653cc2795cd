// Elementwise binary ops: arithmetic, min/max, bitwise, shifts, comparisons, umulhi, where, fma,
// clamp, cdiv. Floats draw NaN, infinities and signed zeros among their inputs; integers span
// their full range so that wrapping is exercised.
#include <cmath>
#include <limits>

#include "tests/conformance/cases.h"
#include "tests/conformance/kernel_helpers.h"

namespace monotile::conformance {
namespace {

using namespace monotile::dsl;  // NOLINT
using enum ScalarType;

const std::vector<std::vector<int64_t>> kShapes = {{16}, {64, 32}, {2, 16, 16}};
const ScalarType kFloats[] = {kF32, kF16, kBf16, kF64};
const ScalarType kInts[] = {kI32, kU32, kI64, kI8};

Generator full_range(ScalarType type) {
  switch (type) {
    case kI8: return integers(-128, 127);
    case kU8: return integers(0, 255);
    case kI16: return integers(-32768, 32767);
    case kU32: return integers(0, 4294967295LL);
    case kI64: return integers(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
    default: return integers(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  }
}

// Integers in [lo, hi] without zero (divisors).
Generator nonzero(int64_t lo, int64_t hi) {
  return [lo, hi](HostTensor& tensor, Rng& rng) {
    std::uniform_int_distribution<int64_t> dist(lo, hi);
    for (int64_t i = 0; i < tensor.size(); ++i) {
      int64_t v = 0;
      while (v == 0) v = dist(rng);
      tensor.set_int(i, v);
    }
  };
}

double nan_min(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::nan("");
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}
double nan_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::nan("");
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}

// Sums and products computed in uint64: no signed overflow in the reference either.
uint64_t as_unsigned(int64_t v) { return static_cast<uint64_t>(v); }

void add_float_arith(std::vector<Case>& cases) {
  struct Op {
    const char* name;
    BinaryOp op;
    std::function<double(double, double)> ref;
  };
  const std::vector<Op> ops = {
      {"add", [](Value a, Value b) { return a + b; }, [](double a, double b) { return a + b; }},
      {"sub", [](Value a, Value b) { return a - b; }, [](double a, double b) { return a - b; }},
      {"mul", [](Value a, Value b) { return a * b; }, [](double a, double b) { return a * b; }},
      {"div", [](Value a, Value b) { return a / b; }, [](double a, double b) { return a / b; }},
      {"minimum", [](Value a, Value b) { return minimum(a, b); }, nan_min},
      {"maximum", [](Value a, Value b) { return maximum(a, b); }, nan_max},
  };
  for (const Op& op : ops) {
    for (ScalarType dtype : kFloats) {
      for (const auto& shape : kShapes) {
        ElementwiseSpec spec;
        spec.op = op.name, spec.in = dtype, spec.out = dtype, spec.shape = shape;
        spec.generate_a = with_specials(uniform(-4, 4), 0.08);
        spec.float_binary = op.ref;
        cases.push_back(binary_case(spec, op.op));
      }
    }
  }
}

void add_int_arith(std::vector<Case>& cases) {
  struct Op {
    const char* name;
    BinaryOp op;
    std::function<int64_t(int64_t, int64_t)> ref;
    bool divisor = false;
  };
  const std::vector<Op> ops = {
      {"add", [](Value a, Value b) { return a + b; },
       [](int64_t a, int64_t b) { return static_cast<int64_t>(as_unsigned(a) + as_unsigned(b)); }},
      {"sub", [](Value a, Value b) { return a - b; },
       [](int64_t a, int64_t b) { return static_cast<int64_t>(as_unsigned(a) - as_unsigned(b)); }},
      {"mul", [](Value a, Value b) { return a * b; },
       [](int64_t a, int64_t b) { return static_cast<int64_t>(as_unsigned(a) * as_unsigned(b)); }},
      {"div", [](Value a, Value b) { return a / b; }, [](int64_t a, int64_t b) { return a / b; }, true},
      {"rem", [](Value a, Value b) { return a % b; }, [](int64_t a, int64_t b) { return a % b; }, true},
      {"minimum", [](Value a, Value b) { return minimum(a, b); }, [](int64_t a, int64_t b) { return std::min(a, b); }},
      {"maximum", [](Value a, Value b) { return maximum(a, b); }, [](int64_t a, int64_t b) { return std::max(a, b); }},
      {"and", [](Value a, Value b) { return a & b; }, [](int64_t a, int64_t b) { return a & b; }},
      {"or", [](Value a, Value b) { return a | b; }, [](int64_t a, int64_t b) { return a | b; }},
      {"xor", [](Value a, Value b) { return a ^ b; }, [](int64_t a, int64_t b) { return a ^ b; }},
  };
  for (const Op& op : ops) {
    for (ScalarType dtype : kInts) {
      for (const auto& shape : kShapes) {
        ElementwiseSpec spec;
        spec.op = op.name, spec.in = dtype, spec.out = dtype, spec.shape = shape;
        spec.generate_a = full_range(dtype);
        // Divisors stay small so quotients are not all zero; INT_MIN / -1 is left out (it wraps).
        if (op.divisor) spec.generate_b = is_signed(dtype) ? nonzero(-100, 100) : nonzero(1, 200);
        if (op.divisor && dtype == kI8) spec.generate_b = nonzero(-13, 13);
        if (op.divisor && is_signed(dtype)) {
          spec.generate_a = dtype == kI64 ? integers(-(int64_t{1} << 62), int64_t{1} << 62) : integers(-100000, 100000);
          if (dtype == kI8) spec.generate_a = integers(-127, 127);
        }
        spec.int_binary = op.ref;
        cases.push_back(binary_case(spec, op.op));
      }
    }
  }
}

void add_shifts_and_umulhi(std::vector<Case>& cases) {
  for (ScalarType dtype : {kI32, kU32, kI64}) {
    const int bits = scalar_type_bits(dtype);
    for (const auto& shape : kShapes) {
      ElementwiseSpec spec;
      spec.in = dtype, spec.out = dtype, spec.shape = shape;
      spec.generate_a = full_range(dtype);
      spec.generate_b = integers(0, bits - 1);
      spec.op = "shl";
      spec.int_binary = [](int64_t a, int64_t b) { return static_cast<int64_t>(as_unsigned(a) << b); };
      cases.push_back(binary_case(spec, [](Value a, Value b) { return a << b; }));
      spec.op = "shr";
      // Arithmetic for signed types, logical for unsigned: u32 values arrive zero-extended.
      spec.int_binary = [](int64_t a, int64_t b) { return a >> b; };
      cases.push_back(binary_case(spec, [](Value a, Value b) { return a >> b; }));
      spec.op = "umulhi";
      spec.generate_b = full_range(dtype);
      spec.int_binary = [bits](int64_t a, int64_t b) -> int64_t {
        if (bits == 64) {
          return static_cast<int64_t>((static_cast<unsigned __int128>(as_unsigned(a)) * as_unsigned(b)) >> 64);
        }
        return static_cast<int64_t>((as_unsigned(a) & 0xffffffffu) * (as_unsigned(b) & 0xffffffffu) >> 32);
      };
      cases.push_back(binary_case(spec, [](Value a, Value b) { return umulhi(a, b); }));
    }
  }
}

void add_comparisons(std::vector<Case>& cases) {
  struct Op {
    const char* name;
    BinaryOp op;
    std::function<bool(double, double)> ref;
  };
  const std::vector<Op> ops = {
      {"eq", [](Value a, Value b) { return a == b; }, [](double a, double b) { return a == b; }},
      {"ne", [](Value a, Value b) { return a != b; }, [](double a, double b) { return a != b; }},
      {"lt", [](Value a, Value b) { return a < b; }, [](double a, double b) { return a < b; }},
      {"le", [](Value a, Value b) { return a <= b; }, [](double a, double b) { return a <= b; }},
      {"gt", [](Value a, Value b) { return a > b; }, [](double a, double b) { return a > b; }},
      {"ge", [](Value a, Value b) { return a >= b; }, [](double a, double b) { return a >= b; }},
  };
  for (const Op& op : ops) {
    for (ScalarType dtype : {kF32, kBf16, kI32, kU32}) {
      ElementwiseSpec spec;
      spec.op = op.name, spec.in = dtype, spec.out = kI1, spec.shape = {64, 32};
      // Few distinct values, so equal pairs are common; floats also meet NaN and signed zeros.
      spec.generate_a = is_float(dtype) ? with_specials(integers(-3, 3), 0.1) : integers(0, 5);
      spec.float_binary = [ref = op.ref](double a, double b) { return ref(a, b) ? 1.0 : 0.0; };
      if (!is_float(dtype)) {
        spec.float_binary = nullptr;
        spec.int_binary = [ref = op.ref](int64_t a, int64_t b) -> int64_t {
          return ref(static_cast<double>(a), static_cast<double>(b));
        };
      }
      cases.push_back(binary_case(spec, op.op));
    }
  }
}

// out = where(c, a, b), fma(a, b, c), clamp(a, b, c) over three inputs.
Case ternary_case(const std::string& op, ScalarType dtype, std::vector<int64_t> shape,
                  std::function<Value(Value, Value, Value)> body, std::function<double(double, double, double)> ref,
                  Generator generate_c, std::optional<Tolerance> tolerance = std::nullopt) {
  Case c;
  c.name = case_name(op, dtype, shape);
  const ScalarType c_type = op == "where" ? kI1 : dtype;
  c.build = [=] {
    Builder b("ternary_" + op);
    Value pa = b.arg("a", ptr(ElementType{dtype})), pb = b.arg("b", ptr(ElementType{dtype}));
    Value pc = b.arg("c", ptr(ElementType{c_type})), out = b.arg("out", ptr(ElementType{dtype}));
    Value offsets = flat_offsets(shape);
    store(out + offsets, body(load(pa + offsets), load(pb + offsets), load(pc + offsets)));
    return b.finish();
  };
  Generator values = is_float(dtype) ? uniform(-4, 4) : integers(-1000, 1000);
  c.tensors = {{"a", dtype, shape, Role::kInput, values, std::nullopt},
               {"b", dtype, shape, Role::kInput, values, std::nullopt},
               {"c", c_type, shape, Role::kInput, generate_c, std::nullopt},
               {"out", dtype, shape, Role::kOutput, nullptr, tolerance}};
  c.reference = [ref](Tensors& t) {
    for (int64_t i = 0; i < t["a"].size(); ++i) t["out"].set(i, ref(t["a"].get(i), t["b"].get(i), t["c"].get(i)));
  };
  return c;
}

void add_ternary(std::vector<Case>& cases) {
  for (ScalarType dtype : {kF32, kBf16, kI32, kI64}) {
    for (const auto& shape : kShapes) {
      cases.push_back(ternary_case(
          "where", dtype, shape, [](Value a, Value b, Value c) { return where(c, a, b); },
          [](double a, double b, double c) { return c != 0 ? a : b; }, integers(0, 1)));
    }
  }
  for (ScalarType dtype : {kF32, kF16, kBf16, kF64}) {
    for (const auto& shape : kShapes) {
      // One rounding: the f32 reference is the double fma rounded once (exact products fit double).
      cases.push_back(ternary_case(
          "fma", dtype, shape, [](Value a, Value b, Value c) { return fma(a, b, c); },
          [](double a, double b, double c) { return std::fma(a, b, c); }, uniform(-4, 4)));
      cases.push_back(ternary_case(
          "clamp", dtype, shape, [](Value a, Value b, Value c) { return clamp(a, minimum(b, c), maximum(b, c)); },
          [](double a, double b, double c) { return std::min(std::max(a, std::min(b, c)), std::max(b, c)); },
          uniform(-4, 4), Tolerance::exact()));
    }
  }
  for (ScalarType dtype : {kI32, kI64}) {
    ElementwiseSpec spec;
    spec.op = "cdiv", spec.in = dtype, spec.out = dtype, spec.shape = {64, 32};
    spec.generate_a = integers(0, 100000);
    spec.generate_b = integers(1, 300);
    spec.int_binary = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
    cases.push_back(binary_case(spec, [](Value a, Value b) { return cdiv(a, b); }));
  }
}

}  // namespace

std::vector<Case> elementwise_cases() {
  std::vector<Case> cases;
  add_float_arith(cases);
  add_int_arith(cases);
  add_shifts_and_umulhi(cases);
  add_comparisons(cases);
  add_ternary(cases);
  return cases;
}

}  // namespace monotile::conformance
