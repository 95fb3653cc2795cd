// Ops across a tile: reductions along an axis, scans, sort and top-k. Ties in argmax/argmin/sort/
// topk go to the lower index; NaN is greater than every number for them (dsl/ir.h).
#pragma once

#include <concepts>
#include <functional>
#include <optional>

#include "dsl/arith.h"
#include "dsl/value.h"
#include "support/source_location.h"

namespace monotile::dsl {

// Reductions. Without an axis the whole tile reduces to a scalar. keep_dims leaves a size-1 dim.
// sum of i1/i8/u8/i16 accumulates (and returns) i32; sum of f16/bf16 accumulates in f32 and
// rounds once. max/min return NaN when any element is NaN.
Value sum(const Value& x, std::optional<int> axis = std::nullopt, bool keep_dims = false,
          SourceLocation loc = SourceLocation::current());
Value max(const Value& x, std::optional<int> axis = std::nullopt, bool keep_dims = false,
          SourceLocation loc = SourceLocation::current());
Value min(const Value& x, std::optional<int> axis = std::nullopt, bool keep_dims = false,
          SourceLocation loc = SourceLocation::current());
// max/min with a floating-point or tile second argument are elementwise, as in Triton
// (maximum/minimum): `max(v, 0.0f)` is v clamped below at 0, never a reduction over axis 0. An
// integer second argument is the reduction's axis: `max(v, 1)` reduces along axis 1.
template <std::floating_point Scalar>
Value max(const Value& x, Scalar other, SourceLocation loc = SourceLocation::current()) {
  return maximum(Operand(x, loc), Operand(other, loc), loc);
}
template <std::floating_point Scalar>
Value min(const Value& x, Scalar other, SourceLocation loc = SourceLocation::current()) {
  return minimum(Operand(x, loc), Operand(other, loc), loc);
}
inline Value max(const Value& x, const Value& other, SourceLocation loc = SourceLocation::current()) {
  return maximum(Operand(x, loc), Operand(other, loc), loc);
}
inline Value min(const Value& x, const Value& other, SourceLocation loc = SourceLocation::current()) {
  return minimum(Operand(x, loc), Operand(other, loc), loc);
}
Value xor_sum(const Value& x, std::optional<int> axis = std::nullopt, bool keep_dims = false,
              SourceLocation loc = SourceLocation::current());
// i32 index of the largest / smallest element along `axis`.
Value argmax(const Value& x, int axis, bool keep_dims = false,
             SourceLocation loc = SourceLocation::current());
Value argmin(const Value& x, int axis, bool keep_dims = false,
             SourceLocation loc = SourceLocation::current());

// A combine function: two scalars of the tile's dtype -> one; it must be associative (and, for
// reduce, commutative), since the order of combination is unspecified.
using Combine = std::function<Value(Value, Value)>;
Value reduce(const Value& x, int axis, const Combine& combine, bool keep_dims = false,
             SourceLocation loc = SourceLocation::current());

// Inclusive scans along `axis` (reverse: from the end). cumsum promotes like sum.
Value cumsum(const Value& x, int axis = 0, bool reverse = false,
             SourceLocation loc = SourceLocation::current());
Value associative_scan(const Value& x, int axis, const Combine& combine, bool reverse = false,
                       SourceLocation loc = SourceLocation::current());

// Values and their i32 source indices along the axis.
struct Sorted {
  Value values;
  Value indices;
};
Sorted sort(const Value& x, int axis = -1, bool descending = false,
            SourceLocation loc = SourceLocation::current());
// The k largest (descending) or smallest elements along the last axis, in order.
Sorted topk(const Value& x, int64_t k, bool descending = true,
            SourceLocation loc = SourceLocation::current());

}  // namespace monotile::dsl
