// Math functions: a dtype check and one IR op each.
#include "dsl/math.h"

#include "dsl/builder.h"
#include "dsl/error.h"
#include "dsl/promote.h"

namespace monotile::dsl {
namespace {

Value unary_math(OpCode code, const Value& x, bool integers_too, const SourceLocation& loc) {
  std::string op(op_name(code));
  Builder& builder = Builder::current(op, loc);
  Type type = builder.type_of(x, op, loc);
  ScalarType scalar = type.element.scalar;
  bool ok = !type.element.pointer &&
            (is_float(scalar) || (integers_too && is_integer(scalar) && scalar != ScalarType::kI1));
  if (!ok) {
    throw Error(SourceLoc::from(loc), op, op + " does not take " + dtype_str(type.element) + " operands",
                integers_too ? "integer (not i1) or float operands" : "float operands (f16, bf16, f32, f64)",
                dtype_str(type.element),
                type.element.scalar == ScalarType::kMxfp4 ? "dequantize first with dequant_mxfp4"
                                                          : "convert first, e.g. " + op + "(x.to(f32))");
  }
  return builder.emit1(code, {x}, {}, std::move(type), loc);
}

}  // namespace

Value exp(const Value& x, SourceLocation loc) { return unary_math(OpCode::kExp, x, false, loc); }
Value exp2(const Value& x, SourceLocation loc) { return unary_math(OpCode::kExp2, x, false, loc); }
Value log(const Value& x, SourceLocation loc) { return unary_math(OpCode::kLog, x, false, loc); }
Value log2(const Value& x, SourceLocation loc) { return unary_math(OpCode::kLog2, x, false, loc); }
Value sqrt(const Value& x, SourceLocation loc) { return unary_math(OpCode::kSqrt, x, false, loc); }
Value rsqrt(const Value& x, SourceLocation loc) { return unary_math(OpCode::kRsqrt, x, false, loc); }
Value sin(const Value& x, SourceLocation loc) { return unary_math(OpCode::kSin, x, false, loc); }
Value cos(const Value& x, SourceLocation loc) { return unary_math(OpCode::kCos, x, false, loc); }
Value tanh(const Value& x, SourceLocation loc) { return unary_math(OpCode::kTanh, x, false, loc); }
Value sigmoid(const Value& x, SourceLocation loc) {
  return unary_math(OpCode::kSigmoid, x, false, loc);
}
Value softplus(const Value& x, SourceLocation loc) {
  return unary_math(OpCode::kSoftplus, x, false, loc);
}
Value erf(const Value& x, SourceLocation loc) { return unary_math(OpCode::kErf, x, false, loc); }
Value floor(const Value& x, SourceLocation loc) { return unary_math(OpCode::kFloor, x, false, loc); }
Value ceil(const Value& x, SourceLocation loc) { return unary_math(OpCode::kCeil, x, false, loc); }
Value abs(const Value& x, SourceLocation loc) { return unary_math(OpCode::kAbs, x, true, loc); }

}  // namespace monotile::dsl
