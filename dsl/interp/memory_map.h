// The host memory a launch may touch: a sorted list of allocations. Each pointer argument belongs
// to the allocation it points into, and every access derived from it is checked against that one
// allocation; a lane outside it is described relative to it ("element 1027 of \"x\", which holds
// 1024"), even when the address happens to fall inside a neighbouring allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dsl/interp/interpreter.h"

namespace monotile::dsl::interp {

// One allocation: bytes [begin, end) and the caller's name for it ("allocation at 0x..." if none).
struct Buffer {
  uint64_t begin = 0;
  uint64_t end = 0;
  std::string name;

  // Whether [address, address + bytes) lies inside.
  bool holds(uint64_t address, size_t bytes) const {
    return address >= begin && address <= end && bytes <= end - address;
  }
};

class MemoryMap {
 public:
  explicit MemoryMap(std::span<const Allocation> allocations);

  // The allocation a pointer argument at `address` points into: the innermost one holding that
  // byte (a view listed inside a larger buffer is the view), else one that ends at `address` (a
  // pointer one past the end, or to an empty allocation); null when none does.
  const Buffer* buffer_of(uint64_t address) const;
  // Whether [address, address + bytes) lies inside some allocation (for addresses without a
  // provenance: integers cast to pointers).
  bool contains(uint64_t address, size_t bytes) const;
  // Why an access derived from the pointer argument `argument`, which points into `buffer`, is
  // outside it: the address, its element and byte offset, the buffer's size, how far past the end
  // or before the start, the allocation the address falls in instead (if any), and a masking hint.
  std::string describe_outside(const Buffer& buffer, std::string_view argument, uint64_t address,
                               size_t element_bytes) const;
  // Why an access without a provenance is outside every allocation: names the nearest allocation
  // and the element index in it.
  std::string describe_outside(uint64_t address, size_t element_bytes) const;
  // "element 3 of \"flags\"" when inside an allocation, else the hex address.
  std::string describe(uint64_t address, size_t element_bytes) const;

 private:
  const Buffer* find(uint64_t address) const;
  std::vector<Buffer> buffers_;    // sorted by begin, then the larger first
  std::vector<uint64_t> max_end_;  // max_end_[i]: the largest end among buffers_[0..i]
};

}  // namespace monotile::dsl::interp
