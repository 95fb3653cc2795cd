// Ops that make values from nothing: program ids, ranges and constant-filled tiles.
#pragma once

#include <cstdint>
#include "support/source_location.h"
#include <vector>

#include "dsl/value.h"

namespace monotile::dsl {

// This program instance's index along grid axis 0, 1 or 2 (i32 scalar).
Value program_id(int axis, SourceLocation loc = SourceLocation::current());
// The grid's size along axis 0, 1 or 2 (i32 scalar).
Value num_programs(int axis, SourceLocation loc = SourceLocation::current());
// i32 tile [end - start] holding start, start + 1, ..., end - 1.
Value arange(int64_t start, int64_t end, SourceLocation loc = SourceLocation::current());
// A tile of `shape` (a scalar when empty) filled with `value` (a literal or a scalar Value),
// converted to `dtype`.
Value full(const std::vector<int64_t>& shape, const Operand& value, ElementType dtype,
           SourceLocation loc = SourceLocation::current());
Value zeros(const std::vector<int64_t>& shape, ElementType dtype,
            SourceLocation loc = SourceLocation::current());
// A tile of x's shape and dtype filled with `value` / zero.
Value full_like(const Value& x, const Operand& value,
                SourceLocation loc = SourceLocation::current());
Value zeros_like(const Value& x, SourceLocation loc = SourceLocation::current());

}  // namespace monotile::dsl
