// Promotion and broadcasting. Literals are "weak" (they never widen a value's dtype except across
// kinds: int literal with i1, float literal with integers), exactly as Triton treats Python scalars.
#include "dsl/promote.h"

#include <limits>

#include "dsl/error.h"
#include "dsl/shape_rules.h"

namespace monotile::dsl {
namespace {

SourceLoc at(const SourceLocation& loc) { return SourceLoc::from(loc); }

bool fits_int32(int64_t value) {
  return value >= std::numeric_limits<int32_t>::min() && value <= std::numeric_limits<int32_t>::max();
}

// Whether `literal` lies in the range of integer type `type` (so -1 does not fit u32).
bool literal_fits(ScalarType type, int64_t literal) {
  int bits = scalar_type_bits(type);
  if (bits >= 64) return true;
  if (type == ScalarType::kI1) return literal == 0 || literal == 1;
  int64_t lo = is_signed(type) ? -(int64_t{1} << (bits - 1)) : 0;
  int64_t hi = is_signed(type) ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
  return literal >= lo && literal <= hi;
}

ScalarType promote_pair(ScalarType a, ScalarType b) {
  if (a == b) return a;
  bool fa = is_float(a), fb = is_float(b);
  if (fa || fb) {
    if (a == ScalarType::kF64 || b == ScalarType::kF64) return ScalarType::kF64;
    if (a == ScalarType::kF32 || b == ScalarType::kF32) return ScalarType::kF32;
    if (fa && fb) return ScalarType::kF32;  // f16 with bf16
    return fa ? a : b;                      // a half type with an integer
  }
  if (a == ScalarType::kI1) return b;
  if (b == ScalarType::kI1) return a;
  int bits_a = scalar_type_bits(a), bits_b = scalar_type_bits(b);
  if (bits_a != bits_b) return bits_a > bits_b ? a : b;
  return is_signed(a) ? b : a;  // same width, one unsigned: unsigned wins
}

}  // namespace

std::string dtype_str(ElementType type) { return Type{type, {}}.str(); }

ElementType literal_dtype(const Operand& literal) {
  switch (literal.kind()) {
    case Operand::Kind::kBool: return ElementType{ScalarType::kI1};
    case Operand::Kind::kInt:
      return ElementType{fits_int32(literal.int_literal()) ? ScalarType::kI32 : ScalarType::kI64};
    case Operand::Kind::kFloat: return ElementType{ScalarType::kF32};
    case Operand::Kind::kValue: break;
  }
  return ElementType{ScalarType::kI32};
}

ElementType common_dtype(Builder& builder, std::span<const Operand> operands, std::string_view op,
                         const SourceLocation& loc) {
  std::optional<ScalarType> values;
  bool int_literal = false, float_literal = false;
  for (const Operand& operand : operands) {
    if (!operand.is_value()) {
      int_literal |= operand.kind() == Operand::Kind::kInt;
      float_literal |= operand.kind() == Operand::Kind::kFloat;
      continue;
    }
    ElementType type = builder.type_of(operand.value(), op, loc).element;
    if (type.pointer) {
      throw Error(at(loc), std::string(op), std::string(op) + " does not take pointer operands",
                  "numbers", dtype_str(type),
                  "pointers only take + and - with integer offsets; load the data first");
    }
    if (type.scalar == ScalarType::kMxfp4) {
      throw Error(at(loc), std::string(op), std::string(op) + " does not take mxfp4 operands",
                  "numbers", "mxfp4", "dequantize first with dequant_mxfp4(packed, scales)");
    }
    values = values ? promote_pair(*values, type.scalar) : type.scalar;
  }
  if (!values) {
    // Only literals: each takes its own dtype, then they promote like values.
    ScalarType result = literal_dtype(operands.front()).scalar;
    for (const Operand& operand : operands) result = promote_pair(result, literal_dtype(operand).scalar);
    return ElementType{result};
  }
  ScalarType result = *values;
  if (float_literal && !is_float(result)) result = ScalarType::kF32;
  if (int_literal && result == ScalarType::kI1) result = ScalarType::kI32;
  return ElementType{result};
}

std::vector<int64_t> common_shape(Builder& builder, std::span<const Operand> operands,
                                  std::string_view op, const SourceLocation& loc) {
  std::vector<int64_t> shape;
  bool ok = true;
  for (const Operand& operand : operands) {
    if (!operand.is_value()) continue;
    if (!broadcast_shapes(shape, builder.type_of(operand.value(), op, loc).shape, &shape)) ok = false;
  }
  if (ok) return shape;
  std::string shapes;
  for (const Operand& operand : operands) {
    if (!operand.is_value()) continue;
    if (!shapes.empty()) shapes += " and ";
    shapes += shape_str(builder.type_of(operand.value(), op, loc).shape);
  }
  throw Error(at(loc), std::string(op), "shapes " + shapes + " are not broadcastable",
              "shapes whose dims, aligned from the right, are equal or 1", shapes,
              "add a size-1 dim with expand_dims (row(x) / col(x)), or reshape / trans one operand");
}

Value broadcast_value(Builder& builder, const Value& value, const std::vector<int64_t>& shape,
                      std::string_view op, const SourceLocation& loc) {
  Type type = builder.type_of(value, op, loc);
  if (type.shape == shape) return value;
  std::vector<int64_t> joined;
  if (type.shape.size() > shape.size() || !broadcast_shapes(type.shape, shape, &joined) ||
      joined != shape) {
    throw Error(at(loc), std::string(op),
                "shape " + shape_str(type.shape) + " does not broadcast to " + shape_str(shape),
                shape_str(shape), shape_str(type.shape),
                "dims are aligned from the right and must be equal or 1; use expand_dims, "
                "reshape or trans first");
  }
  Value result = value;
  if (!type.is_scalar()) {
    while (type.shape.size() < shape.size()) {
      Attrs attrs;
      attrs.axis = 0;
      type.shape.insert(type.shape.begin(), 1);
      result = builder.emit1(OpCode::kExpandDims, {result}, attrs, type, loc);
    }
  }
  if (type.shape == shape) return result;
  return builder.emit1(OpCode::kBroadcast, {result}, {}, Type{type.element, shape}, loc);
}

Value cast_value(Builder& builder, const Value& value, ElementType dtype,
                 const SourceLocation& loc) {
  Type type = builder.type_of(value, "cast", loc);
  if (type.element == dtype) return value;
  return builder.emit1(OpCode::kCast, {value}, {}, Type{dtype, type.shape}, loc);
}

Value materialize(Builder& builder, const Operand& operand, ElementType dtype,
                  const std::vector<int64_t>& shape, std::string_view op,
                  const SourceLocation& loc) {
  if (operand.is_value()) {
    return broadcast_value(builder, cast_value(builder, operand.value(), dtype, loc), shape, op, loc);
  }
  Type type{dtype, shape};
  if (is_float(dtype.scalar)) {
    double number = operand.kind() == Operand::Kind::kFloat
                        ? operand.float_literal()
                        : static_cast<double>(operand.int_literal());
    return builder.constant(type, 0, number, loc);
  }
  if (operand.kind() == Operand::Kind::kFloat) {
    throw Error(at(loc), std::string(op),
                "the float constant " + std::to_string(operand.float_literal()) +
                    " is used as " + dtype_str(dtype),
                dtype_str(dtype), "a float constant", "convert it in C++ or cast the other operand");
  }
  if (!literal_fits(dtype.scalar, operand.int_literal())) {
    throw Error(at(loc), std::string(op),
                "the constant " + std::to_string(operand.int_literal()) + " does not fit " +
                    dtype_str(dtype),
                "a value in the range of " + dtype_str(dtype), std::to_string(operand.int_literal()),
                "cast the other operand to a wider type first, e.g. .to(i64)");
  }
  return builder.constant(type, operand.int_literal(), 0, loc);
}

}  // namespace monotile::dsl
