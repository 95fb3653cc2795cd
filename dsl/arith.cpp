// Elementwise arithmetic: each op promotes, broadcasts and checks its operand dtypes, then emits
// exactly one IR op on identical operand types (plus the casts and broadcasts promotion needs).
#include "dsl/arith.h"

#include <array>
#include <optional>

#include "dsl/builder.h"
#include "dsl/error.h"
#include "dsl/promote.h"

namespace monotile::dsl {
namespace {

SourceLoc at(const SourceLocation& loc) { return SourceLoc::from(loc); }

// Which element types an op takes.
enum class Accept {
  kNumber,   // integers (not i1) and floats
  kCompare,  // integers (i1 too) and floats
  kBitwise,  // integers and i1
  kShift,    // integers, not i1
  kFloat,    // floats
  kUmulhi,   // i32, u32, i64
};

bool accepts(Accept accept, ScalarType type) {
  switch (accept) {
    case Accept::kNumber: return type != ScalarType::kI1;
    case Accept::kCompare: return true;
    case Accept::kBitwise: return is_integer(type);
    case Accept::kShift: return is_integer(type) && type != ScalarType::kI1;
    case Accept::kFloat: return is_float(type);
    case Accept::kUmulhi:
      return type == ScalarType::kI32 || type == ScalarType::kU32 || type == ScalarType::kI64;
  }
  return false;
}

std::string accepted_text(Accept accept) {
  switch (accept) {
    case Accept::kNumber: return "integer or float operands (not i1)";
    case Accept::kCompare: return "integer, i1 or float operands";
    case Accept::kBitwise: return "integer or i1 operands";
    case Accept::kShift: return "integer operands (not i1)";
    case Accept::kFloat: return "float operands (f16, bf16, f32, f64)";
    case Accept::kUmulhi: return "i32, u32 or i64 operands";
  }
  return "";
}

std::string accept_hint(Accept accept, ScalarType type) {
  if (accept == Accept::kFloat) return "convert first, e.g. x.to(f32)";
  if (type == ScalarType::kI1) return "convert the i1 value first, e.g. mask.to(i32)";
  if (accept == Accept::kBitwise || accept == Accept::kShift) {
    return "bitwise ops need integers: compare floats first (x > 0), or reinterpret with "
           "x.bitcast(u32)";
  }
  return "convert first, e.g. x.to(i32)";
}

void check_accepts(Accept accept, ElementType type, std::string_view op,
                   const SourceLocation& loc) {
  if (accepts(accept, type.scalar)) return;
  throw Error(at(loc), std::string(op),
              std::string(op) + " does not take " + dtype_str(type) + " operands",
              accepted_text(accept), dtype_str(type), accept_hint(accept, type.scalar));
}

Value elementwise(OpCode code, std::span<const Operand> operands, Accept accept,
                  const SourceLocation& loc, std::optional<CmpPredicate> cmp = {}) {
  std::string_view op = op_name(code);
  Builder& builder = Builder::current(op, loc);
  ElementType dtype = common_dtype(builder, operands, op, loc);
  check_accepts(accept, dtype, op, loc);
  std::vector<int64_t> shape = common_shape(builder, operands, op, loc);
  std::vector<Value> values;
  for (const Operand& operand : operands) {
    values.push_back(materialize(builder, operand, dtype, shape, op, loc));
  }
  Attrs attrs;
  ElementType result = dtype;
  if (cmp) {
    attrs.cmp = *cmp;
    result = ElementType{ScalarType::kI1};
  }
  return builder.emit1(code, values, std::move(attrs), Type{result, shape}, loc);
}

Value binary(OpCode code, const Operand& a, const Operand& b, Accept accept,
             const SourceLocation& loc, std::optional<CmpPredicate> cmp = {}) {
  std::array<Operand, 2> operands{a, b};
  return elementwise(code, operands, accept, loc, cmp);
}

Value unary(OpCode code, const Operand& a, Accept accept, const SourceLocation& loc) {
  std::array<Operand, 1> operands{a};
  return elementwise(code, operands, accept, loc);
}

bool is_pointer(Builder& builder, const Operand& operand, std::string_view op,
                const SourceLocation& loc) {
  return operand.is_value() && builder.type_of(operand.value(), op, loc).element.pointer;
}

// ptr + offset, offset + ptr, ptr - offset: kAddPtr; nothing when neither operand is a pointer.
std::optional<Value> pointer_arithmetic(bool subtract, const Operand& a, const Operand& b) {
  const SourceLocation& loc = a.loc();
  std::string_view op = subtract ? "sub" : "add";
  Builder& builder = Builder::current(op, loc);
  bool pointer_a = is_pointer(builder, a, op, loc), pointer_b = is_pointer(builder, b, op, loc);
  if (!pointer_a && !pointer_b) return std::nullopt;
  if (pointer_a && pointer_b) {
    throw Error(at(loc), std::string(op), std::string(op) + " of two pointers",
                "a pointer and an integer offset", "two pointers",
                "index with integer offsets from one base pointer");
  }
  if (subtract && pointer_b) {
    throw Error(at(loc), "sub", "a pointer is subtracted from a number",
                "pointer - offset", "offset - pointer", "write ptr - offset");
  }
  const Operand& pointer = pointer_a ? a : b;
  const Operand& offset = pointer_a ? b : a;
  ElementType offset_type;
  if (offset.is_value()) {
    offset_type = builder.type_of(offset.value(), op, loc).element;
  } else if (offset.kind() == Operand::Kind::kInt) {
    offset_type = literal_dtype(offset);
  } else {
    offset_type = ElementType{ScalarType::kF32};
  }
  if (!is_integer(offset_type.scalar) || offset_type.scalar == ScalarType::kI1 || offset_type.pointer) {
    throw Error(at(loc), std::string(op), "a pointer is offset by a " + dtype_str(offset_type) + " value",
                "an integer offset (i32, i64, ...)", dtype_str(offset_type),
                "offsets count elements; convert with .to(i32) or .to(i64)");
  }
  std::array<Operand, 2> both{pointer, offset};
  std::vector<int64_t> shape = common_shape(builder, both, op, loc);
  Value base = broadcast_value(builder, pointer.value(), shape, op, loc);
  Value delta;
  if (offset.is_value()) {
    delta = broadcast_value(builder, offset.value(), shape, op, loc);
    if (subtract) delta = builder.emit1(OpCode::kNeg, {delta}, {}, Type{offset_type, shape}, loc);
  } else {
    int64_t literal = subtract ? -offset.int_literal() : offset.int_literal();
    delta = materialize(builder, Operand(literal, loc), offset_type, shape, op, loc);
  }
  ElementType pointer_type = builder.type_of(base, op, loc).element;
  return builder.emit1(OpCode::kAddPtr, {base, delta}, {}, Type{pointer_type, shape}, loc);
}

}  // namespace

Value operator+(const Operand& a, const Operand& b) {
  if (auto pointer = pointer_arithmetic(false, a, b)) return *pointer;
  return binary(OpCode::kAdd, a, b, Accept::kNumber, a.loc());
}
Value operator-(const Operand& a, const Operand& b) {
  if (auto pointer = pointer_arithmetic(true, a, b)) return *pointer;
  return binary(OpCode::kSub, a, b, Accept::kNumber, a.loc());
}
Value operator*(const Operand& a, const Operand& b) {
  return binary(OpCode::kMul, a, b, Accept::kNumber, a.loc());
}
Value operator/(const Operand& a, const Operand& b) {
  return binary(OpCode::kDiv, a, b, Accept::kNumber, a.loc());
}
Value operator%(const Operand& a, const Operand& b) {
  return binary(OpCode::kRem, a, b, Accept::kNumber, a.loc());
}
Value operator&(const Operand& a, const Operand& b) {
  return binary(OpCode::kAnd, a, b, Accept::kBitwise, a.loc());
}
Value operator|(const Operand& a, const Operand& b) {
  return binary(OpCode::kOr, a, b, Accept::kBitwise, a.loc());
}
Value operator^(const Operand& a, const Operand& b) {
  return binary(OpCode::kXor, a, b, Accept::kBitwise, a.loc());
}
Value operator<<(const Operand& a, const Operand& b) {
  return binary(OpCode::kShl, a, b, Accept::kShift, a.loc());
}
Value operator>>(const Operand& a, const Operand& b) {
  return binary(OpCode::kShr, a, b, Accept::kShift, a.loc());
}
Value operator==(const Operand& a, const Operand& b) {
  return binary(OpCode::kCmp, a, b, Accept::kCompare, a.loc(), CmpPredicate::kEq);
}
Value operator!=(const Operand& a, const Operand& b) {
  return binary(OpCode::kCmp, a, b, Accept::kCompare, a.loc(), CmpPredicate::kNe);
}
Value operator<(const Operand& a, const Operand& b) {
  return binary(OpCode::kCmp, a, b, Accept::kCompare, a.loc(), CmpPredicate::kLt);
}
Value operator<=(const Operand& a, const Operand& b) {
  return binary(OpCode::kCmp, a, b, Accept::kCompare, a.loc(), CmpPredicate::kLe);
}
Value operator>(const Operand& a, const Operand& b) {
  return binary(OpCode::kCmp, a, b, Accept::kCompare, a.loc(), CmpPredicate::kGt);
}
Value operator>=(const Operand& a, const Operand& b) {
  return binary(OpCode::kCmp, a, b, Accept::kCompare, a.loc(), CmpPredicate::kGe);
}
Value operator-(const Operand& a) { return unary(OpCode::kNeg, a, Accept::kNumber, a.loc()); }
Value operator~(const Operand& a) { return unary(OpCode::kNot, a, Accept::kBitwise, a.loc()); }
Value operator!(const Operand& a) {
  Builder& builder = Builder::current("not", a.loc());
  std::array<Operand, 1> operands{a};
  ElementType type = common_dtype(builder, operands, "not", a.loc());
  if (type.scalar != ScalarType::kI1) {
    throw Error(at(a.loc()), "not", "logical not (!) takes an i1 value, not " + dtype_str(type),
                "i1", dtype_str(type), "use ~x for bitwise not, or compare first (x == 0)");
  }
  return unary(OpCode::kNot, a, Accept::kBitwise, a.loc());
}

Value where(const Operand& cond, const Operand& a, const Operand& b, SourceLocation loc) {
  Builder& builder = Builder::current("where", loc);
  if (cond.is_value()) {
    ElementType type = builder.type_of(cond.value(), "where", loc).element;
    if (type != ElementType{ScalarType::kI1}) {
      throw Error(at(loc), "where", "the condition has dtype " + dtype_str(type) + ", not i1", "i1",
                  dtype_str(type), "compare to get a condition, e.g. where(x > 0, x, 0.0f)");
    }
  } else if (cond.kind() != Operand::Kind::kBool) {
    throw Error(at(loc), "where", "the condition is a number", "an i1 value or a bool",
                "a number", "compare to get a condition, e.g. where(x > 0, x, 0.0f)");
  }
  std::array<Operand, 2> choices{a, b};
  ElementType dtype = common_dtype(builder, choices, "where", loc);
  std::array<Operand, 3> all{cond, a, b};
  std::vector<int64_t> shape = common_shape(builder, all, "where", loc);
  Value c = materialize(builder, cond, ElementType{ScalarType::kI1}, shape, "where", loc);
  Value x = materialize(builder, a, dtype, shape, "where", loc);
  Value y = materialize(builder, b, dtype, shape, "where", loc);
  return builder.emit1(OpCode::kSelect, {c, x, y}, {}, Type{dtype, shape}, loc);
}

Value minimum(const Operand& a, const Operand& b, SourceLocation loc) {
  return binary(OpCode::kMin, a, b, Accept::kNumber, loc);
}
Value maximum(const Operand& a, const Operand& b, SourceLocation loc) {
  return binary(OpCode::kMax, a, b, Accept::kNumber, loc);
}
Value clamp(const Operand& x, const Operand& lo, const Operand& hi, SourceLocation loc) {
  return minimum(maximum(x, lo, loc), hi, loc);
}

Value fma(const Operand& a, const Operand& b, const Operand& c, SourceLocation loc) {
  std::array<Operand, 3> operands{a, b, c};
  return elementwise(OpCode::kFma, operands, Accept::kFloat, loc);
}

Value cdiv(const Operand& a, const Operand& b, SourceLocation loc) {
  Builder& builder = Builder::current("cdiv", loc);
  std::array<Operand, 2> operands{a, b};
  ElementType dtype = common_dtype(builder, operands, "cdiv", loc);
  if (!is_integer(dtype.scalar) || dtype.scalar == ScalarType::kI1) {
    throw Error(at(loc), "cdiv", "cdiv does not take " + dtype_str(dtype) + " operands",
                "integer operands (not i1)", dtype_str(dtype), "convert first, e.g. x.to(i32)");
  }
  Value sum = binary(OpCode::kAdd, a, b, Accept::kNumber, loc);
  Value less = binary(OpCode::kSub, sum, Operand(1, loc), Accept::kNumber, loc);
  return binary(OpCode::kDiv, less, b, Accept::kNumber, loc);
}

Value umulhi(const Operand& a, const Operand& b, SourceLocation loc) {
  return binary(OpCode::kUmulhi, a, b, Accept::kUmulhi, loc);
}

Value cast(const Value& x, ElementType type, SourceLocation loc) {
  Builder& builder = Builder::current("cast", loc);
  ElementType from = builder.type_of(x, "cast", loc).element;
  if (from.pointer || type.pointer) {
    throw Error(at(loc), "cast", "cast from " + dtype_str(from) + " to " + dtype_str(type),
                "numbers", from.pointer ? dtype_str(from) : dtype_str(type),
                "pointers convert only through arithmetic with integer offsets");
  }
  if (from.scalar == ScalarType::kMxfp4 || type.scalar == ScalarType::kMxfp4) {
    throw Error(at(loc), "cast", "cast from " + dtype_str(from) + " to " + dtype_str(type),
                "numbers", "mxfp4",
                "dequantize with dequant_mxfp4(packed, scales), or reinterpret bytes with "
                "bitcast(x, u8)");
  }
  return cast_value(builder, x, type, loc);
}

Value bitcast(const Value& x, ElementType type, SourceLocation loc) {
  Builder& builder = Builder::current("bitcast", loc);
  Type from = builder.type_of(x, "bitcast", loc);
  // A pointer reinterprets as a pointer to another pointee (a view of the same bytes: MXFP4's
  // packed bytes read four a word), never as a number.
  if (from.element.pointer && type.pointer) {
    if (from.element == type) return x;
    return builder.emit1(OpCode::kBitcast, {x}, {}, Type{type, from.shape}, loc);
  }
  if (from.element.pointer || type.pointer) {
    throw Error(at(loc), "bitcast", "bitcast from " + dtype_str(from.element) + " to " + dtype_str(type),
                "numbers, or pointers both", dtype_str(from.element) + " to " + dtype_str(type),
                "a pointer reinterprets only as another pointer (a view: bitcast(p, ptr(i32)))");
  }
  int from_bits = scalar_type_bits(from.element.scalar), to_bits = scalar_type_bits(type.scalar);
  if (from_bits != to_bits) {
    throw Error(at(loc), "bitcast",
                "bitcast from " + dtype_str(from.element) + " (" + std::to_string(from_bits) +
                    " bits) to " + dtype_str(type) + " (" + std::to_string(to_bits) +
                    " bits) changes the bit width",
                std::to_string(from_bits) + " bits", std::to_string(to_bits) + " bits",
                "bitcast between types of one width (f32 <-> i32/u32, bf16 <-> i16)");
  }
  if (from.element == type) return x;
  return builder.emit1(OpCode::kBitcast, {x}, {}, Type{type, from.shape}, loc);
}

}  // namespace monotile::dsl
