// Shape ops: add, stretch, reorder, stack and split dimensions. Every result is a new value.
#pragma once

#include <cstdint>
#include "support/source_location.h"
#include <utility>
#include <vector>

#include "dsl/value.h"

namespace monotile::dsl {

// Inserts a size-1 dim at `axis` (negative counts from the end: -1 appends).
Value expand_dims(const Value& x, int axis, SourceLocation loc = SourceLocation::current());
// [n] -> [1, n] (a row to broadcast down columns) and [n] -> [n, 1] (a column).
Value row(const Value& x, SourceLocation loc = SourceLocation::current());
Value col(const Value& x, SourceLocation loc = SourceLocation::current());
// x stretched to `shape` by numpy rules.
Value broadcast_to(const Value& x, const std::vector<int64_t>& shape,
                   SourceLocation loc = SourceLocation::current());
// Same elements in row-major order, new shape; one dim may be -1 (inferred).
Value reshape(const Value& x, std::vector<int64_t> shape,
              SourceLocation loc = SourceLocation::current());
// Dims permuted by `perm` (result dim i is x's dim perm[i]); empty reverses them (a 2-D transpose).
Value trans(const Value& x, std::vector<int64_t> perm = {},
            SourceLocation loc = SourceLocation::current());
// Two same-typed tiles stacked along a new last dim of size 2.
Value join(const Value& a, const Value& b, SourceLocation loc = SourceLocation::current());
// The inverse of join: x's last dim must be 2.
std::pair<Value, Value> split(const Value& x, SourceLocation loc = SourceLocation::current());
// a and b (same dtype and rank, equal dims except `axis`) concatenated along `axis`.
Value cat(const Value& a, const Value& b, int axis = 0,
          SourceLocation loc = SourceLocation::current());

}  // namespace monotile::dsl
