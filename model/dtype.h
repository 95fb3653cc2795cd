// The element types of a safetensors file, their names as the format spells them and their sizes;
// bf16 and f32 conversions that round once to nearest even (NaN stays NaN).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace monotile::model {

enum class Dtype { kBool, kU8, kI8, kU16, kI16, kF16, kBF16, kU32, kI32, kF32, kU64, kI64, kF64, kF8E4M3, kF8E5M2 };

// "BF16", "F32", ... as the safetensors header spells them.
std::string_view dtype_name(Dtype dtype);
std::optional<Dtype> dtype_from_name(std::string_view name);
int dtype_size(Dtype dtype);

inline float bf16_to_float(uint16_t bits) {
  uint32_t word = uint32_t{bits} << 16;
  float value;
  std::memcpy(&value, &word, sizeof value);
  return value;
}

inline uint16_t bf16_from_float(float value) {
  uint32_t word;
  std::memcpy(&word, &value, sizeof word);
  if ((word & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((word >> 16) | 0x40u);
  word += 0x7fffu + ((word >> 16) & 1u);
  return static_cast<uint16_t>(word >> 16);
}

// A double rounded once to bf16 (nearest even): through f32 rounded to odd, so no double rounding.
uint16_t bf16_from_double(double value);
inline double round_to_bf16(double value) { return bf16_to_float(bf16_from_double(value)); }

}  // namespace monotile::model
