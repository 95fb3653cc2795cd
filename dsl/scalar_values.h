// Exact round-to-nearest-even of a double to a float dtype's value set (f64, f32, f16, bf16),
// so that constants in the IR hold exactly the value their dtype can represent.
#pragma once

#include "dsl/ir.h"

namespace monotile::dsl {

// `value` rounded to the nearest value of `type` (ties to even; overflow to infinity; NaN kept).
// `type` must be a float type.
double round_to_dtype(ScalarType type, double value);

}  // namespace monotile::dsl
