// The interpreter's names for the f16/bf16 conversions of dsl/scalar_semantics.h, kept for hosts
// and tests that convert their buffers the way the interpreter does (rounding once to nearest
// even).
#pragma once

#include "dsl/scalar_semantics.h"

namespace monotile::dsl::interp {

using ::monotile::dsl::bf16_bits_from_double;
using ::monotile::dsl::bf16_bits_to_double;
using ::monotile::dsl::f16_bits_from_double;
using ::monotile::dsl::f16_bits_to_double;
using ::monotile::dsl::round_to_bf16;
using ::monotile::dsl::round_to_f16;

}  // namespace monotile::dsl::interp
