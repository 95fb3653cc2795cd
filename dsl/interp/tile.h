// A tile's elements in the interpreter: floats as doubles holding exactly the dtype's value, integers
// (and i1, mxfp4 bytes, pointers as addresses) as int64 in canonical form: sign-extended for signed
// types, zero-extended for unsigned ones, 0/1 for i1. Every op writes canonical values only. A
// pointer tile also carries each lane's provenance: the kernel argument its address came from.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dsl/ir.h"
#include "dsl/scalar_semantics.h"

namespace monotile::dsl::interp {

// Whether elements of this type live in Tile::floats (else Tile::ints).
inline bool stored_as_float(const ElementType& type) { return !type.pointer && is_float(type.scalar); }

// The lane's address was not derived from a pointer argument (an integer cast to a pointer, or an
// argument outside every allocation): it is checked against every allocation instead of one.
inline constexpr int32_t kNoOrigin = -1;

// Where each lane of a pointer tile came from: the index of the pointer parameter its address was
// derived from (through addptr, shape ops, select, control flow), or kNoOrigin. Nearly every tile
// has one origin for all lanes, held in `uniform` with `lanes` empty; `lanes` holds one per lane
// only when they differ (a select or cat between pointers of two arguments).
struct Provenance {
  int32_t uniform = kNoOrigin;
  std::vector<int32_t> lanes;

  int32_t at(size_t i) const { return lanes.empty() ? uniform : lanes[i]; }
  bool is_uniform() const { return lanes.empty(); }
  void set_uniform(int32_t origin) {
    uniform = origin;
    lanes.clear();
  }
  // One origin per lane for `count` lanes (the current origins expanded when uniform).
  void expand(size_t count) {
    if (lanes.empty()) lanes.assign(count, uniform);
  }
  // Back to one origin when every lane agrees.
  void compact() {
    if (lanes.empty()) return;
    const int32_t first = lanes[0];
    if (std::all_of(lanes.begin(), lanes.end(), [first](int32_t o) { return o == first; })) {
      set_uniform(first);
    }
  }
};

struct Tile {
  std::vector<double> floats;
  std::vector<int64_t> ints;
  Provenance provenance;  // pointer tiles only

  // Sizes the storage for `type` (reusing capacity); contents are unspecified and the provenance
  // is kNoOrigin until the op that writes the tile sets it.
  void reset(const Type& type) {
    provenance.set_uniform(kNoOrigin);
    const auto count = static_cast<size_t>(type.num_elements());
    if (stored_as_float(type.element)) {
      floats.resize(count);
      ints.clear();
    } else {
      ints.resize(count);
      floats.clear();
    }
  }
  size_t size() const { return floats.empty() ? ints.size() : floats.size(); }
};

// Wraps an integer to `type`'s width (two's complement) in canonical form.
inline int64_t wrap_integer(ScalarType type, uint64_t value) {
  switch (type) {
    case ScalarType::kI1: return static_cast<int64_t>(value & 1);
    case ScalarType::kI8: return static_cast<int8_t>(value);
    case ScalarType::kU8:
    case ScalarType::kMxfp4: return static_cast<uint8_t>(value);
    case ScalarType::kI16: return static_cast<int16_t>(value);
    case ScalarType::kI32: return static_cast<int32_t>(value);
    case ScalarType::kU32: return static_cast<uint32_t>(value);
    default: return static_cast<int64_t>(value);
  }
}

// Rounds a double to the float type (nearest even), exactly once.
inline double round_float(ScalarType type, double value) {
  switch (type) {
    case ScalarType::kF32: return static_cast<double>(static_cast<float>(value));
    case ScalarType::kF16: return round_to_f16(value);
    case ScalarType::kBf16: return round_to_bf16(value);
    default: return value;
  }
}

// Calls fn(wrap) with a lambda that wraps to `type`: loops templated on it avoid a per-element switch.
template <typename Fn>
void with_integer_wrap(ScalarType type, Fn&& fn) {
  switch (type) {
    case ScalarType::kI1: return fn([](uint64_t v) { return static_cast<int64_t>(v & 1); });
    case ScalarType::kI8: return fn([](uint64_t v) { return static_cast<int64_t>(static_cast<int8_t>(v)); });
    case ScalarType::kU8:
    case ScalarType::kMxfp4: return fn([](uint64_t v) { return static_cast<int64_t>(static_cast<uint8_t>(v)); });
    case ScalarType::kI16: return fn([](uint64_t v) { return static_cast<int64_t>(static_cast<int16_t>(v)); });
    case ScalarType::kI32: return fn([](uint64_t v) { return static_cast<int64_t>(static_cast<int32_t>(v)); });
    case ScalarType::kU32: return fn([](uint64_t v) { return static_cast<int64_t>(static_cast<uint32_t>(v)); });
    default: return fn([](uint64_t v) { return static_cast<int64_t>(v); });
  }
}

// Row-major strides of a shape (in elements).
inline std::vector<int64_t> row_major_strides(std::span<const int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

// "[2, 5]": the multi-index of flat element `flat` in `shape` ("[]" for a scalar).
std::string lane_str(std::span<const int64_t> shape, int64_t flat);

}  // namespace monotile::dsl::interp

namespace monotile::dsl::interp {

// The scalar type whose arithmetic applies to elements of `type`: pointers behave as i64 addresses.
inline ScalarType arithmetic_type(const ElementType& type) {
  return type.pointer ? ScalarType::kI64 : type.scalar;
}

}  // namespace monotile::dsl::interp
