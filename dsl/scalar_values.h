// The exact values an integer dtype holds, for constants in the IR (the builder's and constant
// folding's): integers wrapped to their width. Floats are rounded by dsl/scalar_semantics.h.
#pragma once

#include <cstdint>

#include "dsl/ir.h"

namespace monotile::dsl {

// `value` wrapped to integer `type`'s width, sign-extended (signed types) or zero-extended back to
// 64 bits; i1 keeps the low bit.
int64_t wrap_to_dtype(ScalarType type, int64_t value);

}  // namespace monotile::dsl
