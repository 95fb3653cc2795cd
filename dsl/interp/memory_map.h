// The host memory a launch may touch: a sorted list of allocations. Every load, store, atomic and
// wait checks each selected lane's [address, address + size) against it, and an out-of-bounds lane
// is described relative to the nearest allocation ("element 1027 of \"x\", which holds 1024").
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dsl/interp/interpreter.h"

namespace monotile::dsl::interp {

class MemoryMap {
 public:
  explicit MemoryMap(std::span<const Allocation> allocations);

  // Whether [address, address + bytes) lies inside one allocation.
  bool contains(uint64_t address, size_t bytes) const;
  // Why an access is not inside: names the nearest allocation and the element index in it.
  std::string describe_outside(uint64_t address, size_t element_bytes) const;
  // "element 3 of \"flags\"" when inside an allocation, else the hex address.
  std::string describe(uint64_t address, size_t element_bytes) const;

 private:
  struct Range {
    uint64_t begin = 0;
    uint64_t end = 0;
    std::string name;
  };
  const Range* find(uint64_t address) const;
  std::vector<Range> ranges_;      // sorted by begin
  std::vector<uint64_t> max_end_;  // max_end_[i]: the largest end among ranges_[0..i]
};

}  // namespace monotile::dsl::interp
