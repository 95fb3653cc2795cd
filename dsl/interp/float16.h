// Host conversions between IEEE binary16 (f16), bfloat16 (bf16) and double, rounding to nearest
// even with correct overflow to infinity, subnormals and quiet NaNs; shared by the interpreter and tests.
#pragma once

#include <cstdint>

namespace monotile::dsl::interp {

// `value` rounded once (nearest even) to the 16-bit format; NaN stays NaN (quieted).
uint16_t f16_bits_from_double(double value);
uint16_t bf16_bits_from_double(double value);
double f16_bits_to_double(uint16_t bits);
double bf16_bits_to_double(uint16_t bits);

// Round trips: the nearest representable value, as a double (exact).
inline double round_to_f16(double value) { return f16_bits_to_double(f16_bits_from_double(value)); }
inline double round_to_bf16(double value) {
  return bf16_bits_to_double(bf16_bits_from_double(value));
}

}  // namespace monotile::dsl::interp
