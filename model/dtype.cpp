// Dtype names and sizes, and the one-rounding double -> bf16 conversion.
#include "model/dtype.h"

#include <cmath>

namespace monotile::model {
namespace {

struct DtypeRow {
  Dtype dtype;
  std::string_view name;
  int size;
};

constexpr DtypeRow kDtypes[] = {
    {Dtype::kBool, "BOOL", 1}, {Dtype::kU8, "U8", 1},     {Dtype::kI8, "I8", 1},
    {Dtype::kU16, "U16", 2},   {Dtype::kI16, "I16", 2},   {Dtype::kF16, "F16", 2},
    {Dtype::kBF16, "BF16", 2}, {Dtype::kU32, "U32", 4},   {Dtype::kI32, "I32", 4},
    {Dtype::kF32, "F32", 4},   {Dtype::kU64, "U64", 8},   {Dtype::kI64, "I64", 8},
    {Dtype::kF64, "F64", 8},   {Dtype::kF8E4M3, "F8_E4M3", 1}, {Dtype::kF8E5M2, "F8_E5M2", 1},
};

}  // namespace

std::string_view dtype_name(Dtype dtype) {
  for (const DtypeRow& row : kDtypes) {
    if (row.dtype == dtype) return row.name;
  }
  return "?";
}

std::optional<Dtype> dtype_from_name(std::string_view name) {
  for (const DtypeRow& row : kDtypes) {
    if (row.name == name) return row.dtype;
  }
  return std::nullopt;
}

int dtype_size(Dtype dtype) {
  for (const DtypeRow& row : kDtypes) {
    if (row.dtype == dtype) return row.size;
  }
  return 0;
}

uint16_t bf16_from_double(double value) {
  if (std::isnan(value)) return 0x7fc0;
  float narrowed = static_cast<float>(value);
  if (std::isfinite(narrowed) && static_cast<double>(narrowed) != value) {
    // Round to odd: of the two f32 neighbours of `value`, keep the one with its last bit set, so
    // that the one later rounding to bf16 is exact. Stepping the bits down by one moves toward zero
    // for either sign (|narrowed| > |value| >= 0, so narrowed is not zero).
    uint32_t word;
    std::memcpy(&word, &narrowed, sizeof word);
    if (std::fabs(static_cast<double>(narrowed)) > std::fabs(value)) --word;
    word |= 1u;
    std::memcpy(&narrowed, &word, sizeof word);
  }
  return bf16_from_float(narrowed);
}

}  // namespace monotile::model
