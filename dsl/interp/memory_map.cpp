// Allocation lookup by binary search over ranges sorted by start address.
#include "dsl/interp/memory_map.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace monotile::dsl::interp {

MemoryMap::MemoryMap(std::span<const Allocation> allocations) {
  for (const Allocation& allocation : allocations) {
    const auto begin = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(allocation.base));
    ranges_.push_back({begin, begin + allocation.bytes,
                       allocation.name.empty() ? absl::StrFormat("allocation at 0x%x", begin) : allocation.name});
  }
  std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  uint64_t running = 0;
  for (const Range& range : ranges_) {
    running = std::max(running, range.end);
    max_end_.push_back(running);
  }
}

const MemoryMap::Range* MemoryMap::find(uint64_t address) const {
  // The last range starting at or before `address`.
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                             [](uint64_t value, const Range& range) { return value < range.begin; });
  if (it == ranges_.begin()) return nullptr;
  return &*(it - 1);
}

bool MemoryMap::contains(uint64_t address, size_t bytes) const {
  if (address + bytes < address) return false;
  // Allocations may overlap (a view inside a buffer): walk back over ranges starting at or before
  // `address` while one of them could still reach past it (max_end_ is a prefix maximum).
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                             [](uint64_t value, const Range& range) { return value < range.begin; });
  for (auto i = it - ranges_.begin(); i-- > 0;) {
    if (max_end_[static_cast<size_t>(i)] <= address) break;
    if (address + bytes <= ranges_[static_cast<size_t>(i)].end) return true;
  }
  return false;
}

std::string MemoryMap::describe_outside(uint64_t address, size_t element_bytes) const {
  if (ranges_.empty()) {
    return absl::StrFormat(
        "address 0x%x is outside every allocation; hint: no allocations were given to the interpreter "
        "(InterpretOptions::allocations)",
        address);
  }
  // Nearest range by distance to [begin, end).
  const Range* nearest = nullptr;
  uint64_t best = UINT64_MAX;
  for (const Range& range : ranges_) {
    uint64_t distance = address < range.begin ? range.begin - address
                        : address >= range.end ? address - range.end + 1
                                               : 0;
    if (distance < best) {
      best = distance;
      nearest = &range;
    }
  }
  const auto offset = static_cast<int64_t>(address - nearest->begin);
  const int64_t bytes = static_cast<int64_t>(element_bytes);
  const int64_t count = static_cast<int64_t>((nearest->end - nearest->begin) / element_bytes);
  return absl::StrFormat(
      "address 0x%x is outside every allocation: element %d of \"%s\", which holds %d elements of "
      "%d bytes; hint: mask the lanes past the end",
      address, offset >= 0 ? offset / bytes : -((-offset + bytes - 1) / bytes), nearest->name, count,
      element_bytes);
}

std::string MemoryMap::describe(uint64_t address, size_t element_bytes) const {
  const Range* range = find(address);
  if (range == nullptr || address >= range->end) return absl::StrFormat("0x%x", address);
  return absl::StrFormat("element %d of \"%s\"", (address - range->begin) / element_bytes, range->name);
}

}  // namespace monotile::dsl::interp
