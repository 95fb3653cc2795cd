// Comparisons and min/max as ir.h defines them; f16/bf16 conversions done directly from double so
// that a value is rounded exactly once (double -> float -> bf16 could round twice and land on the
// wrong side).
#include "dsl/scalar_semantics.h"

#include <bit>
#include <cfenv>
#include <cmath>
#include <limits>
#include <vector>

#include "support/check.h"

namespace monotile::dsl {
namespace {

template <typename T>
bool compare_values(CmpPredicate predicate, T a, T b) {
  switch (predicate) {
    case CmpPredicate::kEq:
      return a == b;
    case CmpPredicate::kNe:
      return a != b;
    case CmpPredicate::kLt:
      return a < b;
    case CmpPredicate::kLe:
      return a <= b;
    case CmpPredicate::kGt:
      return a > b;
    case CmpPredicate::kGe:
      return a >= b;
  }
  return false;
}

// Rounds |value| (finite, non-NaN) to a binary format with `mantissa_bits` stored fraction bits and
// exponent range [min_exponent, max_exponent] (unbiased, normal numbers); returns the bit pattern
// without the sign.
uint16_t round_magnitude(double magnitude, int mantissa_bits, int min_exponent, int max_exponent) {
  const int bias = max_exponent;
  const uint16_t infinity = static_cast<uint16_t>(((2 * bias + 1) << mantissa_bits));
  if (magnitude == 0) return 0;
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude = f * 2^exponent, f in [0.5, 1)
  exponent -= 1;                     // now magnitude = 1.x * 2^exponent
  if (exponent < min_exponent) exponent = min_exponent;  // subnormal: fixed quantum
  // The quantum (one unit in the last place) at this exponent.
  const int quantum_exponent = exponent - mantissa_bits;
  const double scaled = std::ldexp(magnitude, -quantum_exponent);  // exact: a power-of-two scale
  double units = std::nearbyint(scaled);  // default rounding mode: nearest even
  // `units` counts quanta; it may have carried into the next binade (units == 2^(m+1)).
  if (units >= std::ldexp(1.0, mantissa_bits + 1)) {
    units /= 2;
    exponent += 1;
  }
  if (exponent > max_exponent) return infinity;
  const auto integer_units = static_cast<uint32_t>(units);
  if (integer_units < (1u << mantissa_bits))
    return static_cast<uint16_t>(integer_units);  // subnormal
  const uint32_t biased = static_cast<uint32_t>(exponent + bias);
  return static_cast<uint16_t>((biased << mantissa_bits) | (integer_units - (1u << mantissa_bits)));
}

uint16_t from_double(double value, int mantissa_bits, int min_exponent, int max_exponent) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const int bias = max_exponent;
  const uint16_t exponent_mask = static_cast<uint16_t>((2 * bias + 1) << mantissa_bits);
  if (std::isnan(value)) {
    // Keep the payload's top bits (as float <-> double conversions do); a zero payload is quieted.
    uint32_t payload = static_cast<uint32_t>(
        (std::bit_cast<uint64_t>(value) >> (52 - mantissa_bits)) & ((1u << mantissa_bits) - 1));
    if (payload == 0) payload = 1u << (mantissa_bits - 1);
    return static_cast<uint16_t>(sign | exponent_mask | payload);
  }
  if (std::isinf(value)) return static_cast<uint16_t>(sign | exponent_mask);
  return static_cast<uint16_t>(
      sign | round_magnitude(std::fabs(value), mantissa_bits, min_exponent, max_exponent));
}

double to_double(uint16_t bits, int mantissa_bits, int max_exponent) {
  const int bias = max_exponent;
  const bool negative = (bits & 0x8000) != 0;
  const uint32_t exponent_field = (bits & 0x7fff) >> mantissa_bits;
  const uint32_t fraction = bits & ((1u << mantissa_bits) - 1);
  double magnitude = 0;
  if (exponent_field == static_cast<uint32_t>(2 * bias + 1)) {
    if (fraction != 0) {  // NaN: the payload goes to the top of the double's fraction
      return std::bit_cast<double>((uint64_t{negative} << 63) | (uint64_t{0x7ff} << 52) |
                                   (uint64_t{fraction} << (52 - mantissa_bits)));
    }
    magnitude = INFINITY;
  } else if (exponent_field == 0) {
    magnitude = std::ldexp(static_cast<double>(fraction), 1 - bias - mantissa_bits);
  } else {
    magnitude = std::ldexp(static_cast<double>(fraction | (1u << mantissa_bits)),
                           static_cast<int>(exponent_field) - bias - mantissa_bits);
  }
  return negative ? -magnitude : magnitude;
}

constexpr int kF16Mantissa = 10, kF16MaxExponent = 15, kF16MinExponent = -14;
constexpr int kBf16Mantissa = 7, kBf16MaxExponent = 127, kBf16MinExponent = -126;

}  // namespace

bool compare(CmpPredicate predicate, double a, double b) {
  return compare_values(predicate, a, b);
}
bool compare(CmpPredicate predicate, int64_t a, int64_t b) {
  return compare_values(predicate, a, b);
}

double float_min(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  if (a < b) return a;
  if (b < a) return b;
  return std::signbit(a) ? a : b;  // equal: only the zeros' signs can differ, and -0 is the lower
}

double float_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  if (a > b) return a;
  if (b > a) return b;
  return std::signbit(a) ? b : a;
}

bool nan_last_less(double a, double b) {
  if (std::isnan(a)) return false;
  return std::isnan(b) || a < b;
}

uint16_t f16_bits_from_double(double value) {
  return from_double(value, kF16Mantissa, kF16MinExponent, kF16MaxExponent);
}
uint16_t bf16_bits_from_double(double value) {
  // Fast path for values that are exact floats (every f32/bf16/f16 tile value): bf16 shares f32's
  // exponent range, so rounding the f32 bit pattern at bit 16 is the whole conversion.
  const auto as_float = static_cast<float>(value);
  if (static_cast<double>(as_float) == value) {
    const uint32_t bits = std::bit_cast<uint32_t>(as_float);
    return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  }
  return from_double(value, kBf16Mantissa, kBf16MinExponent, kBf16MaxExponent);
}
double f16_bits_to_double(uint16_t bits) {
  // Every f16 decoded once (512 KiB): loads and casts of f16 tiles then cost one lookup.
  static const std::vector<double> table = [] {
    std::vector<double> values(1 << 16);
    for (uint32_t i = 0; i < values.size(); ++i)
      values[i] = to_double(static_cast<uint16_t>(i), kF16Mantissa, kF16MaxExponent);
    return values;
  }();
  return table[bits];
}

double bf16_bits_to_double(uint16_t bits) {
  // bf16 is the top half of an f32; NaN payloads survive the float -> double widening.
  return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(bits) << 16));
}

double round_to_dtype(ScalarType type, double value) {
  MT_CHECK(std::fegetround() == FE_TONEAREST);
  switch (type) {
    case ScalarType::kF64:
      return value;
    case ScalarType::kF32:
      return static_cast<double>(static_cast<float>(value));
    // A 16-bit constant's NaN keeps its double payload in the IR (its bits are chosen at lowering).
    case ScalarType::kF16:
      return std::isnan(value) ? value : round_to_f16(value);
    case ScalarType::kBf16:
      return std::isnan(value) ? value : round_to_bf16(value);
    default:
      break;
  }
  MT_CHECK(false, "round_to_dtype of a non-float type");
  return value;
}

}  // namespace monotile::dsl
