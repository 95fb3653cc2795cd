// Rounding to narrower float formats by scaling to the format's quantum and rounding to even;
// integer wrapping by masking.
#include "dsl/scalar_values.h"

#include <cfenv>
#include <cmath>

#include "support/check.h"

namespace monotile::dsl {
namespace {

struct FloatFormat {
  int precision;     // significant bits, the implicit one included
  int min_exponent;  // exponent of the smallest normal number
  int max_exponent;  // exponent of the largest finite number
};

double round_to(const FloatFormat& format, double value) {
  if (!std::isfinite(value) || value == 0) return value;
  int exponent = std::max(std::ilogb(value), format.min_exponent);
  double quantum = std::ldexp(1.0, exponent - (format.precision - 1));
  double rounded = std::nearbyint(value / quantum) * quantum;  // FE_TONEAREST: ties to even
  double max_finite = std::ldexp(2.0 - std::ldexp(1.0, 1 - format.precision), format.max_exponent);
  if (std::fabs(rounded) > max_finite) return std::copysign(INFINITY, value);
  return rounded;
}

}  // namespace

double round_to_dtype(ScalarType type, double value) {
  MT_CHECK(std::fegetround() == FE_TONEAREST);
  switch (type) {
    case ScalarType::kF64: return value;
    case ScalarType::kF32: return static_cast<double>(static_cast<float>(value));
    case ScalarType::kF16: return round_to({11, -14, 15}, value);
    case ScalarType::kBf16: return round_to({8, -126, 127}, value);
    default: break;
  }
  MT_CHECK(false, "round_to_dtype of a non-float type");
  return value;
}

int64_t wrap_to_dtype(ScalarType type, int64_t value) {
  int bits = scalar_type_bits(type);
  if (bits >= 64) return value;
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t low = static_cast<uint64_t>(value) & mask;
  if (is_signed(type) && (low >> (bits - 1)) != 0) low |= ~mask;
  return static_cast<int64_t>(low);
}

}  // namespace monotile::dsl
