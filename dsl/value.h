// Value: a handle to one SSA value (a tile or a scalar) of the program being built; Operand: a Value
// or a C++ literal, as ops and operators take them. Both are cheap copies; neither owns anything.
// A Value stays bound to the builder that made it: using it with another builder is a dsl::Error.
#pragma once

#include <concepts>
#include <cstdint>
#include "support/source_location.h"
#include <vector>

#include "dsl/ir.h"

namespace monotile::dsl {

class Builder;
class Operand;

class Value {
 public:
  Value() = default;  // empty: assign before use

  bool empty() const { return id_ == kNoValue; }
  ValueId id() const { return id_; }
  // Queries on the value's type (its builder must be alive and unfinished).
  Type type(SourceLocation loc = SourceLocation::current()) const;
  ElementType dtype(SourceLocation loc = SourceLocation::current()) const;
  std::vector<int64_t> shape(SourceLocation loc = SourceLocation::current()) const;
  int rank(SourceLocation loc = SourceLocation::current()) const;
  bool is_scalar(SourceLocation loc = SourceLocation::current()) const;

  // Value conversion (kCast): floats round to nearest even, float to int truncates toward zero.
  Value to(ElementType type, SourceLocation loc = SourceLocation::current()) const;
  // Reinterprets the bits (kBitcast): same bit width only.
  Value bitcast(ElementType type, SourceLocation loc = SourceLocation::current()) const;

  // Compound assignment rebinds this handle to a new value (SSA: nothing is mutated).
  Value& operator+=(const Operand& rhs);
  Value& operator-=(const Operand& rhs);
  Value& operator*=(const Operand& rhs);
  Value& operator/=(const Operand& rhs);
  Value& operator%=(const Operand& rhs);
  Value& operator&=(const Operand& rhs);
  Value& operator|=(const Operand& rhs);
  Value& operator^=(const Operand& rhs);

 private:
  friend class Builder;
  Value(ValueId id, uint64_t builder_serial) : id_(id), builder_serial_(builder_serial) {}

  ValueId id_ = kNoValue;
  uint64_t builder_serial_ = 0;
};

// A Value or a C++ literal. A literal takes its dtype from the other operands (Triton's rule: an
// integer literal adopts an integer or float operand's dtype, a float literal a float operand's;
// otherwise an integer literal is i32 and a float literal f32). The implicit conversion records
// where it happened, which is how C++ operators learn the user's line (docs/dsl.md, Errors).
class Operand {
 public:
  enum class Kind { kValue, kInt, kFloat, kBool };

  Operand(const Value& value, SourceLocation loc = SourceLocation::current())
      : kind_(Kind::kValue), value_(value), loc_(loc) {}
  template <std::integral T>
  Operand(T literal, SourceLocation loc = SourceLocation::current())
      : loc_(loc) {
    if constexpr (std::same_as<T, bool>) {
      kind_ = Kind::kBool;
      int_ = literal ? 1 : 0;
    } else {
      kind_ = Kind::kInt;
      int_ = static_cast<int64_t>(literal);
    }
  }
  template <std::floating_point T>
  Operand(T literal, SourceLocation loc = SourceLocation::current())
      : kind_(Kind::kFloat), float_(static_cast<double>(literal)), loc_(loc) {}

  Kind kind() const { return kind_; }
  bool is_value() const { return kind_ == Kind::kValue; }
  const Value& value() const { return value_; }
  int64_t int_literal() const { return int_; }
  double float_literal() const { return float_; }
  const SourceLocation& loc() const { return loc_; }

 private:
  Kind kind_ = Kind::kInt;
  Value value_;
  int64_t int_ = 0;
  double float_ = 0;
  SourceLocation loc_;
};

}  // namespace monotile::dsl
