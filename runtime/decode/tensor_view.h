// TensorView: a tensor the host owns, as the executor sees it (address, dtype, shape, strides in
// elements). The executor reads weights and KV states in place through these; it never copies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/dtype.h"

namespace monotile::runtime::decode {

struct TensorView {
  uint64_t data = 0;  // device address (host address on the CPU device)
  model::Dtype dtype = model::Dtype::kBF16;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // elements, one per dimension

  int64_t elements() const;
  // Row-major dense: strides are the suffix products of the shape (size-1 dimensions' strides
  // are not looked at).
  bool contiguous() const;
  // A view with row-major dense strides.
  static TensorView dense(model::Dtype dtype, std::vector<int64_t> shape, uint64_t data = 0);
};

// "BF16 [2, 6, 4608] strides [27648, 4608, 1]"
std::string describe(const TensorView& view);

// The kernels are built assuming every pointer they get 16-byte aligned, so that they read in
// 16-byte vectors (dsl::lower::LowerOptions::pointer_alignment; specialized_decode.cpp asserts the
// two agree): a weight or state starting elsewhere is refused, not read (a misaligned vector access
// faults the device).
inline constexpr uint64_t kKernelPointerAlignment = 16;
// "" for an aligned address, else why not: " starts at byte address 0x1002, not a multiple of 16
// (the kernels read it in 16-byte vectors: give it its own allocation, or an offset into one that
// is a multiple of 16 bytes)".
std::string misalignment(uint64_t address);
inline std::string misalignment(const TensorView& view) {
  return misalignment(view.data);
}
// "[2, 6, 4608]"
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace monotile::runtime::decode
