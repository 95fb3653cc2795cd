// A host-side tensor of any IR dtype kept in its memory representation (what a kernel reads and
// writes), with element access as double or int64, and the random generators cases draw inputs from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <functional>
#include <random>
#include <span>
#include <vector>

#include "dsl/ir.h"

namespace monotile::conformance {

class HostTensor {
 public:
  HostTensor(dsl::ScalarType dtype, std::vector<int64_t> shape);

  dsl::ScalarType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t size() const { return size_; }
  // Mutable bytes: counts as writing every element.
  std::span<std::byte> bytes() {
    if (!written_.empty()) std::fill(written_.begin(), written_.end(), 1);
    return bytes_;
  }
  std::span<const std::byte> bytes() const { return bytes_; }

  // The element's value: floats decoded, integers (sign- or zero-extended) converted to double.
  double get(int64_t i) const;
  // The stored integer; for i1 the raw byte, so a poisoned (unwritten) byte is never 0 or 1.
  int64_t get_int(int64_t i) const;
  // Stores `value` rounded to the dtype (nearest even); integer dtypes truncate it toward zero.
  void set(int64_t i, double value);
  // Stores `value` wrapped to the integer dtype (i1: value != 0).
  void set_int(int64_t i, int64_t value);
  // Sets every byte: the poison written to outputs before a kernel runs.
  void fill_bytes(uint8_t byte);
  // Whether element i still holds the float poison (all bytes 0xff: a NaN no arithmetic makes).
  bool is_float_poison(int64_t i) const;
  // From now on, record which elements set()/set_int()/bytes() write (a reference's outputs).
  void track_writes() { written_.assign(static_cast<size_t>(size_), 0); }
  bool written(int64_t i) const { return written_.empty() || written_[static_cast<size_t>(i)] != 0; }

  // Row-major flat index of a multi-index.
  int64_t at(std::initializer_list<int64_t> index) const;

 private:
  dsl::ScalarType dtype_;
  std::vector<int64_t> shape_;
  int64_t size_ = 1;
  size_t element_bytes_ = 1;
  std::vector<std::byte> bytes_;
  std::vector<uint8_t> written_;  // empty: not tracking
};

using Rng = std::mt19937_64;
using Generator = std::function<void(HostTensor&, Rng&)>;

// Uniform values in [lo, hi) (floats, rounded to the dtype) or integers in [lo, hi] (integer dtypes).
Generator uniform(double lo, double hi);
// Uniform integers in [lo, hi], stored in any dtype (exact small integers in floats make exact tests).
Generator integers(int64_t lo, int64_t hi);
// `base`, then about `fraction` of the elements replaced by NaN, +-inf, +-0 or +-1.
Generator with_specials(Generator base, double fraction);
// Every element `value`.
Generator constant(double value);

}  // namespace monotile::conformance
