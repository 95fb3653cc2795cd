// Elementwise ops: one C++ expression per element, in registers of the result's layout. f16/bf16
// values live in f32 registers, always exactly representable: each op computes in f32 and rounds
// once (mt_round_bf16 / mt_round_f16), as the IR's semantics say. Signed integer arithmetic goes
// through the unsigned type so that overflow wraps instead of being undefined C++.
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dsl/lower/op_lowering.h"
#include "support/check.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

std::string_view unsigned_of(ScalarType type) {
  switch (type) {
    case ScalarType::kI8:
    case ScalarType::kU8:
    case ScalarType::kMxfp4: return "unsigned char";
    case ScalarType::kI16: return "unsigned short";
    case ScalarType::kI32:
    case ScalarType::kU32: return "unsigned";
    case ScalarType::kI64: return "unsigned long long";
    default: return "unsigned";
  }
}

bool is_half(ScalarType type) { return type == ScalarType::kF16 || type == ScalarType::kBf16; }

// Rounds an f32 expression to the storage precision of `type` (f16/bf16), else leaves it.
std::string rounded(ScalarType type, const std::string& expr) {
  if (type == ScalarType::kBf16) return absl::StrCat("mt_round_bf16(", expr, ")");
  if (type == ScalarType::kF16) return absl::StrCat("mt_round_f16(", expr, ")");
  return expr;
}

std::string float_literal(ScalarType type, double value) {
  if (std::isnan(value)) return type == ScalarType::kF64 ? "__longlong_as_double(0x7ff8000000000000ll)" : "__int_as_float(0x7fc00000)";
  if (std::isinf(value)) {
    std::string inf = type == ScalarType::kF64 ? "__longlong_as_double(0x7ff0000000000000ll)" : "__int_as_float(0x7f800000)";
    return value < 0 ? "(-" + inf + ")" : inf;
  }
  if (type == ScalarType::kF64) return absl::StrFormat("%a", value);
  float f = static_cast<float>(value);
  if (type == ScalarType::kBf16) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    bits &= 0xffff0000u;
    std::memcpy(&f, &bits, 4);
  }
  std::string text = absl::StrFormat("%af", static_cast<double>(f));
  return type == ScalarType::kF16 ? absl::StrCat("mt_round_f16(", text, ")") : text;
}

}  // namespace

std::string OpLowering::constant_literal(const Op& op) const {
  ElementType element = type(op.results[0]).element;
  if (element.pointer) return "nullptr";
  if (is_float(element.scalar)) return float_literal(element.scalar, op.attrs.float_value);
  int64_t value = op.attrs.int_value;
  switch (element.scalar) {
    case ScalarType::kI1: return value != 0 ? "true" : "false";
    case ScalarType::kI64:
      if (value == INT64_MIN) return "(-9223372036854775807ll - 1)";
      return absl::StrCat(value, "ll");
    case ScalarType::kU32: return absl::StrCat(static_cast<uint32_t>(value), "u");
    case ScalarType::kI32:
      if (value == INT32_MIN) return "(-2147483647 - 1)";
      return absl::StrCat(static_cast<int32_t>(value));
    default: return absl::StrCat("(", register_type(element), ")", value);
  }
}

std::string OpLowering::cast_expression(ElementType from, ElementType to, const std::string& a) const {
  if (from.pointer || to.pointer) {
    if (from.pointer && to.pointer) return absl::StrCat("(", register_type(to), ")", a);
    if (to.pointer) return absl::StrCat("(", register_type(to), ")(unsigned long long)", a);
    return absl::StrCat("(", register_type(to), ")(unsigned long long)", a);
  }
  ScalarType f = from.scalar;
  ScalarType t = to.scalar;
  if (t == ScalarType::kI1) return is_float(f) ? absl::StrCat("(", a, " != 0.0f)") : absl::StrCat("(", a, " != 0)");
  if (is_float(t)) {
    // A 16-bit float from a source wider than f32's 24-bit significand (f64, 32- and 64-bit
    // integers) goes through f32 rounded to odd, so that it is rounded once, as the IR says.
    const bool wide = f == ScalarType::kF64 || (!is_float(f) && scalar_type_bytes(f) >= 4);
    std::string value = t == ScalarType::kF64    ? absl::StrCat("(double)", a)
                        : wide && is_half(t) ? absl::StrCat("mt_f32_round_odd((double)", a, ")")
                                             : absl::StrCat("(float)", a);
    if (f == t || (is_half(f) && t == ScalarType::kF32)) return a;
    return rounded(t, value);
  }
  return absl::StrCat("(", register_type(to), ")", a);
}

std::string OpLowering::bitcast_expression(ScalarType from, ScalarType to, const std::string& a) const {
  auto bits_of = [&](ScalarType type, const std::string& v) -> std::string {
    switch (type) {
      case ScalarType::kF32: return absl::StrCat("__float_as_uint(", v, ")");
      case ScalarType::kF64: return absl::StrCat("(unsigned long long)__double_as_longlong(", v, ")");
      case ScalarType::kBf16: return absl::StrCat("(__float_as_uint(", v, ") >> 16)");
      case ScalarType::kF16: return absl::StrCat("(unsigned)mt_f32_to_f16_bits(", v, ")");
      default: return absl::StrCat("(", to_absl(unsigned_of(type)), ")", v);
    }
  };
  std::string bits = bits_of(from, a);
  switch (to) {
    case ScalarType::kF32: return absl::StrCat("__uint_as_float((unsigned)", bits, ")");
    case ScalarType::kF64: return absl::StrCat("__longlong_as_double((long long)", bits, ")");
    case ScalarType::kBf16: return absl::StrCat("__uint_as_float((unsigned)(unsigned short)", bits, " << 16)");
    case ScalarType::kF16: return absl::StrCat("mt_f16_bits_to_f32((unsigned short)", bits, ")");
    default: return absl::StrCat("(", memory_type(to), ")", bits);
  }
}

std::string OpLowering::scalar_expression(const Op& op, const std::vector<std::string>& args) const {
  ElementType in = type(op.operands[0]).element;
  ElementType out = type(op.results[0]).element;
  ScalarType t = in.scalar;
  const std::string& a = args[0];
  const std::string b = args.size() > 1 ? args[1] : "";
  bool fp = is_float(t) && !in.pointer;
  bool f64 = t == ScalarType::kF64;
  std::string rt = register_type(out);
  auto wrap = [&](std::string_view sym) {
    if (t == ScalarType::kI1) return absl::StrCat("(bool)(", a, " ", to_absl(sym), " ", b, ")");
    std::string_view u = unsigned_of(t);
    return absl::StrCat("(", rt, ")((", to_absl(u), ")", a, " ", to_absl(sym), " (", to_absl(u), ")", b, ")");
  };
  auto math = [&](std::string_view f32_name, std::string_view f64_name) {
    return rounded(t, absl::StrCat(to_absl(f64 ? f64_name : f32_name), "(", a, ")"));
  };
  switch (op.code) {
    case OpCode::kAdd: return fp ? rounded(t, absl::StrCat(a, " + ", b)) : wrap("+");
    case OpCode::kSub: return fp ? rounded(t, absl::StrCat(a, " - ", b)) : wrap("-");
    case OpCode::kMul: return fp ? rounded(t, absl::StrCat(a, " * ", b)) : wrap("*");
    case OpCode::kDiv: return fp ? rounded(t, absl::StrCat(a, " / ", b)) : absl::StrCat("(", rt, ")(", a, " / ", b, ")");
    case OpCode::kRem:
      return fp ? rounded(t, absl::StrCat(f64 ? "fmod(" : "fmodf(", a, ", ", b, ")"))
                : absl::StrCat("(", rt, ")(", a, " % ", b, ")");
    case OpCode::kMin:
      return fp ? absl::StrCat("mt_fmin(", a, ", ", b, ")") : absl::StrCat("(", b, " < ", a, " ? ", b, " : ", a, ")");
    case OpCode::kMax:
      return fp ? absl::StrCat("mt_fmax(", a, ", ", b, ")") : absl::StrCat("(", a, " < ", b, " ? ", b, " : ", a, ")");
    case OpCode::kAnd: return absl::StrCat("(", rt, ")(", a, " & ", b, ")");
    case OpCode::kOr: return absl::StrCat("(", rt, ")(", a, " | ", b, ")");
    case OpCode::kXor: return absl::StrCat("(", rt, ")(", a, " ^ ", b, ")");
    case OpCode::kShl: return absl::StrCat("(", rt, ")((", to_absl(unsigned_of(t)), ")", a, " << ", b, ")");
    case OpCode::kShr: return absl::StrCat("(", rt, ")(", a, " >> ", b, ")");
    case OpCode::kUmulhi:
      if (scalar_type_bits(t) == 64) {
        return absl::StrCat("(", rt, ")__umul64hi((unsigned long long)", a, ", (unsigned long long)", b, ")");
      }
      return absl::StrCat("(", rt, ")(((unsigned long long)(", to_absl(unsigned_of(t)), ")", a,
                          " * (unsigned long long)(", to_absl(unsigned_of(t)), ")", b, ") >> ", scalar_type_bits(t), ")");
    case OpCode::kCmp: {
      constexpr std::string_view kSymbols[] = {"==", "!=", "<", "<=", ">", ">="};
      return absl::StrCat("(", a, " ", to_absl(kSymbols[static_cast<int>(op.attrs.cmp)]), " ", b, ")");
    }
    case OpCode::kNeg:
      return fp ? absl::StrCat("(-", a, ")") : absl::StrCat("(", rt, ")(0u - (", to_absl(unsigned_of(t)), ")", a, ")");
    case OpCode::kNot: return t == ScalarType::kI1 ? absl::StrCat("(!", a, ")") : absl::StrCat("(", rt, ")(~", a, ")");
    case OpCode::kAbs:
      if (fp) return math("fabsf", "fabs");
      return absl::StrCat("(", a, " < 0 ? (", rt, ")(0u - (", to_absl(unsigned_of(t)), ")", a, ") : ", a, ")");
    case OpCode::kExp: return math("expf", "exp");
    case OpCode::kExp2: return math("exp2f", "exp2");
    case OpCode::kLog: return math("logf", "log");
    case OpCode::kLog2: return math("log2f", "log2");
    case OpCode::kSqrt: return math("sqrtf", "sqrt");
    case OpCode::kRsqrt: return math("rsqrtf", "mt_rsqrt64");
    case OpCode::kSin: return math("mt_sinf", "mt_sin64");
    case OpCode::kCos: return math("mt_cosf", "mt_cos64");
    case OpCode::kTanh: return math("tanhf", "tanh");
    case OpCode::kErf: return math("erff", "erf");
    case OpCode::kFloor: return math("floorf", "floor");
    case OpCode::kCeil: return math("ceilf", "ceil");
    case OpCode::kSigmoid: return math("mt_sigmoid", "mt_sigmoid");
    case OpCode::kSoftplus: return math("mt_softplus", "mt_softplus");
    case OpCode::kFma:
      return fp ? rounded(t, absl::StrCat(f64 ? "fma(" : "fmaf(", a, ", ", b, ", ", args[2], ")"))
                : absl::StrCat("(", rt, ")((", to_absl(unsigned_of(t)), ")", a, " * (", to_absl(unsigned_of(t)), ")", b,
                               " + (", to_absl(unsigned_of(t)), ")", args[2], ")");
    case OpCode::kSelect: return absl::StrCat("(", a, " ? ", b, " : ", args[2], ")");
    case OpCode::kCast: return cast_expression(in, out, a);
    case OpCode::kBitcast:
      if (out.pointer) return absl::StrCat("(", memory_type(out.scalar), "*)", a);
      return bitcast_expression(in.scalar, out.scalar, a);
    case OpCode::kAddPtr: return absl::StrCat("(", a, " + ", b, ")");
    case OpCode::kMxfp4Pairs:
      return absl::StrCat("mt_mxfp4_pair((unsigned)", a, " & 255u, (unsigned)", b, " & 255u)");
    default: break;
  }
  MT_CHECK(false, "not an elementwise op");
  return "";
}

absl::Status OpLowering::elementwise(const Op& op, const Layout& layout, std::string_view out) {
  ElementType in = type(op.operands[0]).element;
  bool fp = is_float(in.scalar) && !in.pointer;
  bool bitwise = op.code == OpCode::kAnd || op.code == OpCode::kOr || op.code == OpCode::kXor ||
                 op.code == OpCode::kShl || op.code == OpCode::kShr || op.code == OpCode::kNot ||
                 op.code == OpCode::kUmulhi;
  if (fp && bitwise) return unsupported(op, absl::StrCat("takes integer operands, got ", type(op.operands[0]).str()));
  bool transcendental = op.code >= OpCode::kExp && op.code <= OpCode::kCeil;
  if (!fp && transcendental) return unsupported(op, absl::StrCat("takes float operands, got ", type(op.operands[0]).str()));
  std::vector<std::string> arrays;
  for (ValueId operand : op.operands) arrays.push_back(get(operand, layout));
  std::vector<std::string> args;
  for (const std::string& array : arrays) args.push_back(array + "[i]");
  std::string expr = scalar_expression(op, args);
  unrolled("i", layout.num_regs());
  line(absl::StrCat(to_absl(out), "[i] = ", expr, ";"));
  close();
  return absl::OkStatus();
}

}  // namespace monotile::dsl::lower
