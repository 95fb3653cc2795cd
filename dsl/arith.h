// Elementwise arithmetic: C++ operators, comparisons, where, minimum/maximum/clamp, fma, cdiv,
// umulhi, casts. Operands broadcast (numpy) and promote (Triton; docs/dsl.md) to a common type.
// Integer / and % truncate toward zero as in C++ (not Triton's float division); + and - on a
// pointer tile with an integer offset advance by whole elements.
#pragma once

#include "support/source_location.h"

#include "dsl/value.h"

namespace monotile::dsl {

// Operators take the user's line from the implicit conversion of their first operand.
Value operator+(const Operand& a, const Operand& b);
Value operator-(const Operand& a, const Operand& b);
Value operator*(const Operand& a, const Operand& b);
Value operator/(const Operand& a, const Operand& b);
Value operator%(const Operand& a, const Operand& b);
Value operator&(const Operand& a, const Operand& b);  // integers and i1 only
Value operator|(const Operand& a, const Operand& b);
Value operator^(const Operand& a, const Operand& b);
Value operator<<(const Operand& a, const Operand& b);  // integers only; shift >= width undefined
Value operator>>(const Operand& a, const Operand& b);  // arithmetic if signed, logical if unsigned
Value operator==(const Operand& a, const Operand& b);  // comparisons give i1
Value operator!=(const Operand& a, const Operand& b);
Value operator<(const Operand& a, const Operand& b);
Value operator<=(const Operand& a, const Operand& b);
Value operator>(const Operand& a, const Operand& b);
Value operator>=(const Operand& a, const Operand& b);
Value operator-(const Operand& a);  // numbers
Value operator~(const Operand& a);  // integers and i1: bitwise not
Value operator!(const Operand& a);  // i1 only: logical not

// cond ? a : b per element; cond is i1 (or a bool), all three broadcast together.
Value where(const Operand& cond, const Operand& a, const Operand& b,
            SourceLocation loc = SourceLocation::current());
// Elementwise min / max; NaN if either operand is NaN.
Value minimum(const Operand& a, const Operand& b,
              SourceLocation loc = SourceLocation::current());
Value maximum(const Operand& a, const Operand& b,
              SourceLocation loc = SourceLocation::current());
// minimum(maximum(x, lo), hi).
Value clamp(const Operand& x, const Operand& lo, const Operand& hi,
            SourceLocation loc = SourceLocation::current());
// a * b + c with one rounding; floats only.
Value fma(const Operand& a, const Operand& b, const Operand& c,
          SourceLocation loc = SourceLocation::current());
// Integer ceiling division (a + b - 1) / b, for a >= 0 and b > 0.
Value cdiv(const Operand& a, const Operand& b,
           SourceLocation loc = SourceLocation::current());
// The high half of the unsigned product of two i32/u32 (or i64) integers.
Value umulhi(const Operand& a, const Operand& b,
             SourceLocation loc = SourceLocation::current());

// Value conversion and bit reinterpretation (also as x.to(t) / x.bitcast(t)).
Value cast(const Value& x, ElementType type, SourceLocation loc = SourceLocation::current());
Value bitcast(const Value& x, ElementType type,
              SourceLocation loc = SourceLocation::current());

}  // namespace monotile::dsl
