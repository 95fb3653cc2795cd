// Integer wrapping by masking, then sign extension for signed types.
#include "dsl/scalar_values.h"

namespace monotile::dsl {

int64_t wrap_to_dtype(ScalarType type, int64_t value) {
  int bits = scalar_type_bits(type);
  if (bits >= 64) return value;
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t low = static_cast<uint64_t>(value) & mask;
  if (is_signed(type) && (low >> (bits - 1)) != 0) low |= ~mask;
  return static_cast<int64_t>(low);
}

}  // namespace monotile::dsl
