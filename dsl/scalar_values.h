// The exact values a dtype holds, for constants in the IR (the builder's and constant folding's):
// floats rounded to nearest even into f64/f32/f16/bf16, integers wrapped to their width.
#pragma once

#include <cstdint>

#include "dsl/ir.h"

namespace monotile::dsl {

// `value` rounded to the nearest value of `type` (ties to even; overflow to infinity; NaN kept).
// `type` must be a float type.
double round_to_dtype(ScalarType type, double value);

// `value` wrapped to integer `type`'s width, sign-extended (signed types) or zero-extended back to
// 64 bits; i1 keeps the low bit.
int64_t wrap_to_dtype(ScalarType type, int64_t value);

}  // namespace monotile::dsl
