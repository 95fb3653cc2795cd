// Elementwise arithmetic, comparisons, math and select. Floats: f64 computes in double; f32 in
// float; f16/bf16 in float and rounded once per op (ir.h); transcendentals in double, then rounded.
// Integers compute in 64 bits and wrap to their width; undefined cases get a fixed, documented value.
#include <cmath>

#include "dsl/interp/ops.h"
#include "dsl/scalar_semantics.h"

namespace monotile::dsl::interp {
namespace {

// out[i] = fn(a[i]...) with the dtype's computation and rounding; `fn` is generic over float/double.
template <typename Fn, typename... In>
void map_float(ScalarType type, double* out, size_t n, Fn fn, const In*... in) {
  switch (type) {
    case ScalarType::kF64:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>(fn(in[i]...));
      break;
    case ScalarType::kF32:
      for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>(fn(static_cast<float>(in[i])...));
      break;
    case ScalarType::kF16:
      for (size_t i = 0; i < n; ++i) out[i] = round_to_f16(static_cast<float>(fn(static_cast<float>(in[i])...)));
      break;
    default:
      for (size_t i = 0; i < n; ++i) out[i] = round_to_bf16(static_cast<float>(fn(static_cast<float>(in[i])...)));
      break;
  }
}

template <typename Fn, typename... In>
void map_int(ScalarType type, int64_t* out, size_t n, Fn fn, const In*... in) {
  with_integer_wrap(type, [&](auto wrap) {
    for (size_t i = 0; i < n; ++i) out[i] = wrap(static_cast<uint64_t>(fn(in[i]...)));
  });
}

absl::Status float_binary(Frame& frame, const Op& op, ScalarType type, const double* a, const double* b) {
  double* out = frame.result(op).floats.data();
  const size_t n = frame.operand(op, 0).floats.size();
  switch (op.code) {
    case OpCode::kAdd: map_float(type, out, n, [](auto x, auto y) { return x + y; }, a, b); break;
    case OpCode::kSub: map_float(type, out, n, [](auto x, auto y) { return x - y; }, a, b); break;
    case OpCode::kMul: map_float(type, out, n, [](auto x, auto y) { return x * y; }, a, b); break;
    case OpCode::kDiv: map_float(type, out, n, [](auto x, auto y) { return x / y; }, a, b); break;
    case OpCode::kRem: map_float(type, out, n, [](auto x, auto y) { return std::fmod(x, y); }, a, b); break;
    case OpCode::kMin: map_float(type, out, n, [](auto x, auto y) { return float_min(x, y); }, a, b); break;
    case OpCode::kMax: map_float(type, out, n, [](auto x, auto y) { return float_max(x, y); }, a, b); break;
    default: return op_error(frame, op, "takes integer operands, got " + frame.operand_type(op, 0).str());
  }
  return absl::OkStatus();
}

absl::Status int_binary(Frame& frame, const Op& op, ScalarType type, const int64_t* a, const int64_t* b) {
  int64_t* out = frame.result(op).ints.data();
  const size_t n = frame.operand(op, 0).ints.size();
  const int bits = type == ScalarType::kI64 ? 64 : scalar_type_bits(type);
  const bool is_signed_type = is_signed(type);
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  switch (op.code) {
    case OpCode::kAdd: map_int(type, out, n, [&](int64_t x, int64_t y) { return u(x) + u(y); }, a, b); break;
    case OpCode::kSub: map_int(type, out, n, [&](int64_t x, int64_t y) { return u(x) - u(y); }, a, b); break;
    case OpCode::kMul: map_int(type, out, n, [&](int64_t x, int64_t y) { return u(x) * u(y); }, a, b); break;
    // Division by zero is undefined (ir.h); the interpreter gives all ones and the dividend, like RISC-V.
    case OpCode::kDiv:
      map_int(type, out, n, [](int64_t x, int64_t y) -> int64_t {
        if (y == 0) return -1;
        if (y == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(x));  // INT_MIN / -1 wraps
        return x / y;
      }, a, b);
      break;
    case OpCode::kRem:
      map_int(type, out, n, [](int64_t x, int64_t y) -> int64_t {
        if (y == 0) return x;
        if (y == -1) return 0;
        return x % y;
      }, a, b);
      break;
    case OpCode::kMin: map_int(type, out, n, [](int64_t x, int64_t y) { return x < y ? x : y; }, a, b); break;
    case OpCode::kMax: map_int(type, out, n, [](int64_t x, int64_t y) { return x > y ? x : y; }, a, b); break;
    case OpCode::kAnd: map_int(type, out, n, [](int64_t x, int64_t y) { return x & y; }, a, b); break;
    case OpCode::kOr: map_int(type, out, n, [](int64_t x, int64_t y) { return x | y; }, a, b); break;
    case OpCode::kXor: map_int(type, out, n, [](int64_t x, int64_t y) { return x ^ y; }, a, b); break;
    // Shifts by >= the width are undefined (ir.h); the interpreter clamps the amount like PTX.
    case OpCode::kShl:
      map_int(type, out, n, [&](int64_t x, int64_t y) -> uint64_t {
        return u(y) >= static_cast<uint64_t>(bits) ? 0 : u(x) << u(y);
      }, a, b);
      break;
    case OpCode::kShr:
      map_int(type, out, n, [&](int64_t x, int64_t y) -> int64_t {
        const bool too_far = u(y) >= static_cast<uint64_t>(bits);
        if (is_signed_type) return too_far ? (x < 0 ? -1 : 0) : x >> y;
        return too_far ? 0 : static_cast<int64_t>(u(x) >> u(y));  // x is zero-extended: logical
      }, a, b);
      break;
    case OpCode::kUmulhi:
      map_int(type, out, n, [&](int64_t x, int64_t y) -> uint64_t {
        if (bits == 64) return static_cast<uint64_t>((static_cast<unsigned __int128>(u(x)) * u(y)) >> 64);
        const uint64_t mask = (uint64_t{1} << bits) - 1;
        return ((u(x) & mask) * (u(y) & mask)) >> bits;
      }, a, b);
      break;
    default: return op_error(frame, op, "is not a binary op");
  }
  return absl::OkStatus();
}

absl::Status float_unary(Frame& frame, const Op& op, ScalarType type, const double* a) {
  double* out = frame.result(op).floats.data();
  const size_t n = frame.operand(op, 0).floats.size();
  // Exact ops compute in the dtype; transcendentals compute in double and round once.
  const auto d = [](auto x) { return static_cast<double>(x); };
  switch (op.code) {
    case OpCode::kNeg: map_float(type, out, n, [](auto x) { return -x; }, a); break;
    case OpCode::kAbs: map_float(type, out, n, [](auto x) { return std::fabs(x); }, a); break;
    case OpCode::kFloor: map_float(type, out, n, [](auto x) { return std::floor(x); }, a); break;
    case OpCode::kCeil: map_float(type, out, n, [](auto x) { return std::ceil(x); }, a); break;
    case OpCode::kSqrt: map_float(type, out, n, [](auto x) { return std::sqrt(x); }, a); break;
    case OpCode::kExp: map_float(type, out, n, [&](auto x) { return std::exp(d(x)); }, a); break;
    case OpCode::kExp2: map_float(type, out, n, [&](auto x) { return std::exp2(d(x)); }, a); break;
    case OpCode::kLog: map_float(type, out, n, [&](auto x) { return std::log(d(x)); }, a); break;
    case OpCode::kLog2: map_float(type, out, n, [&](auto x) { return std::log2(d(x)); }, a); break;
    case OpCode::kRsqrt: map_float(type, out, n, [&](auto x) { return 1.0 / std::sqrt(d(x)); }, a); break;
    case OpCode::kSin: map_float(type, out, n, [&](auto x) { return std::sin(d(x)); }, a); break;
    case OpCode::kCos: map_float(type, out, n, [&](auto x) { return std::cos(d(x)); }, a); break;
    case OpCode::kTanh: map_float(type, out, n, [&](auto x) { return std::tanh(d(x)); }, a); break;
    case OpCode::kErf: map_float(type, out, n, [&](auto x) { return std::erf(d(x)); }, a); break;
    case OpCode::kSigmoid:
      map_float(type, out, n, [&](auto x) { return 1.0 / (1.0 + std::exp(-d(x))); }, a);
      break;
    case OpCode::kSoftplus:  // log(1 + e^x), stable for large |x|
      map_float(type, out, n, [&](auto x) {
        const double v = d(x);
        return std::max(v, 0.0) + std::log1p(std::exp(-std::fabs(v)));
      }, a);
      break;
    default: return op_error(frame, op, "takes float operands, got " + frame.operand_type(op, 0).str());
  }
  return absl::OkStatus();
}

absl::Status int_unary(Frame& frame, const Op& op, ScalarType type, const int64_t* a) {
  int64_t* out = frame.result(op).ints.data();
  const size_t n = frame.operand(op, 0).ints.size();
  switch (op.code) {
    case OpCode::kNeg: map_int(type, out, n, [](int64_t x) { return 0 - static_cast<uint64_t>(x); }, a); break;
    case OpCode::kNot: map_int(type, out, n, [](int64_t x) { return ~x; }, a); break;
    case OpCode::kAbs:
      map_int(type, out, n, [](int64_t x) { return x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x); }, a);
      break;
    default: return op_error(frame, op, "takes float operands, got " + frame.operand_type(op, 0).str());
  }
  return absl::OkStatus();
}

absl::Status exec_cmp(Frame& frame, const Op& op) {
  const Tile& a = frame.operand(op, 0);
  const Tile& b = frame.operand(op, 1);
  int64_t* out = frame.result(op).ints.data();
  const CmpPredicate cmp = op.attrs.cmp;
  if (!a.floats.empty()) {
    for (size_t i = 0; i < a.floats.size(); ++i) out[i] = compare(cmp, a.floats[i], b.floats[i]);
  } else {
    for (size_t i = 0; i < a.ints.size(); ++i) out[i] = compare(cmp, a.ints[i], b.ints[i]);
  }
  return absl::OkStatus();
}

absl::Status exec_fma(Frame& frame, const Op& op) {
  const ScalarType type = arithmetic_type(frame.operand_type(op, 0).element);
  const Tile& a = frame.operand(op, 0);
  const Tile& b = frame.operand(op, 1);
  const Tile& c = frame.operand(op, 2);
  Tile& out = frame.result(op);
  if (is_float(type)) {
    map_float(type, out.floats.data(), a.floats.size(), [](auto x, auto y, auto z) { return std::fma(x, y, z); },
              a.floats.data(), b.floats.data(), c.floats.data());
  } else {
    map_int(type, out.ints.data(), a.ints.size(), [](int64_t x, int64_t y, int64_t z) {
      return static_cast<uint64_t>(x) * static_cast<uint64_t>(y) + static_cast<uint64_t>(z);
    }, a.ints.data(), b.ints.data(), c.ints.data());
  }
  return absl::OkStatus();
}

absl::Status exec_select(Frame& frame, const Op& op) {
  const std::vector<int64_t>& cond = frame.operand(op, 0).ints;
  const Tile& a = frame.operand(op, 1);
  const Tile& b = frame.operand(op, 2);
  Tile& out = frame.result(op);
  if (!out.floats.empty()) {
    for (size_t i = 0; i < cond.size(); ++i) out.floats[i] = cond[i] ? a.floats[i] : b.floats[i];
  } else {
    for (size_t i = 0; i < cond.size(); ++i) out.ints[i] = cond[i] ? a.ints[i] : b.ints[i];
  }
  if (frame.result_type(op).element.pointer) {
    // Each lane keeps the provenance of the pointer it chose.
    const Provenance &from_a = a.provenance, &from_b = b.provenance;
    if (from_a.is_uniform() && from_b.is_uniform() && from_a.uniform == from_b.uniform) {
      out.provenance.set_uniform(from_a.uniform);
    } else {
      out.provenance.lanes.resize(cond.size());
      for (size_t i = 0; i < cond.size(); ++i) {
        out.provenance.lanes[i] = cond[i] ? from_a.at(i) : from_b.at(i);
      }
      out.provenance.compact();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status exec_elementwise(Frame& frame, const Op& op) {
  switch (op.code) {
    case OpCode::kCmp: return exec_cmp(frame, op);
    case OpCode::kFma: return exec_fma(frame, op);
    case OpCode::kSelect: return exec_select(frame, op);
    default: break;
  }
  const ScalarType type = arithmetic_type(frame.operand_type(op, 0).element);
  const Tile& a = frame.operand(op, 0);
  if (op.operands.size() == 2) {
    const Tile& b = frame.operand(op, 1);
    if (is_float(type)) return float_binary(frame, op, type, a.floats.data(), b.floats.data());
    return int_binary(frame, op, type, a.ints.data(), b.ints.data());
  }
  if (is_float(type)) return float_unary(frame, op, type, a.floats.data());
  return int_unary(frame, op, type, a.ints.data());
}

}  // namespace monotile::dsl::interp
