// Allocation lookup by binary search over buffers sorted by start address, and the words of an
// out-of-bounds error.
#include "dsl/interp/memory_map.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "support/strings.h"

namespace monotile::dsl::interp {
namespace {

// floor(offset / bytes): the element holding byte `offset`, negative before the start.
int64_t element_index(int64_t offset, int64_t bytes) {
  return offset >= 0 ? offset / bytes : -((-offset + bytes - 1) / bytes);
}

}  // namespace

MemoryMap::MemoryMap(std::span<const Allocation> allocations) {
  for (const Allocation& allocation : allocations) {
    const auto begin = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(allocation.base));
    buffers_.push_back(
        {begin, begin + allocation.bytes,
         allocation.name.empty() ? absl::StrFormat("allocation at 0x%x", begin) : allocation.name});
  }
  // Among buffers starting together the larger comes first, so that walking back from an address
  // meets the innermost holder first.
  std::sort(buffers_.begin(), buffers_.end(), [](const Buffer& a, const Buffer& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
  });
  uint64_t running = 0;
  for (const Buffer& buffer : buffers_) {
    running = std::max(running, buffer.end);
    max_end_.push_back(running);
  }
}

const Buffer* MemoryMap::find(uint64_t address) const {
  // Allocations may overlap (a view inside a buffer): walk back over buffers starting at or before
  // `address` while one of them could still reach past it (max_end_ is a prefix maximum).
  auto it =
      std::upper_bound(buffers_.begin(), buffers_.end(), address,
                       [](uint64_t value, const Buffer& buffer) { return value < buffer.begin; });
  for (auto i = static_cast<size_t>(it - buffers_.begin()); i-- > 0;) {
    if (max_end_[i] <= address) break;
    if (address < buffers_[i].end) return &buffers_[i];
  }
  return nullptr;
}

const Buffer* MemoryMap::buffer_of(uint64_t address) const {
  if (const Buffer* holder = find(address)) return holder;
  auto it =
      std::upper_bound(buffers_.begin(), buffers_.end(), address,
                       [](uint64_t value, const Buffer& buffer) { return value < buffer.begin; });
  for (auto i = static_cast<size_t>(it - buffers_.begin()); i-- > 0;) {
    if (max_end_[i] < address) break;
    if (buffers_[i].end == address) return &buffers_[i];
  }
  return nullptr;
}

bool MemoryMap::contains(uint64_t address, size_t bytes) const {
  if (address + bytes < address) return false;
  auto it =
      std::upper_bound(buffers_.begin(), buffers_.end(), address,
                       [](uint64_t value, const Buffer& buffer) { return value < buffer.begin; });
  for (auto i = static_cast<size_t>(it - buffers_.begin()); i-- > 0;) {
    if (max_end_[i] <= address) break;
    if (address + bytes <= buffers_[i].end) return true;
  }
  return false;
}

std::string MemoryMap::describe_outside(const Buffer& buffer, std::string_view argument,
                                        uint64_t address, size_t element_bytes) const {
  const auto bytes = static_cast<int64_t>(element_bytes);
  const auto offset = static_cast<int64_t>(address - buffer.begin);
  const auto size = static_cast<int64_t>(buffer.end - buffer.begin);
  std::string name = absl::StrCat("\"", buffer.name, "\"");
  if (buffer.name != argument) absl::StrAppend(&name, " (argument \"", to_absl(argument), "\")");
  std::string text = absl::StrFormat(
      "address 0x%x is element %d of %s, which holds %d elements of %d bytes (%d bytes); ", address,
      element_index(offset, bytes), name, size / bytes, bytes, size);
  const bool before = offset < 0;
  if (before) {
    absl::StrAppendFormat(&text, "the access at byte offset %d starts %d bytes before the start",
                          offset, -offset);
  } else {
    absl::StrAppendFormat(&text, "the access at byte offset %d ends %d bytes past the end", offset,
                          offset + bytes - size);
  }
  const Buffer* other = find(address);
  if (other != nullptr && other != &buffer) {
    absl::StrAppendFormat(&text, " (the address is element %d of \"%s\", a different allocation)",
                          (address - other->begin) / element_bytes, other->name);
  }
  absl::StrAppend(&text, before ? "; hint: mask the lanes before the start, e.g. mask = offs >= 0"
                                : "; hint: mask the lanes past the end, e.g. mask = offs < n");
  return text;
}

std::string MemoryMap::describe_outside(uint64_t address, size_t element_bytes) const {
  if (buffers_.empty()) {
    return absl::StrFormat(
        "address 0x%x is outside every allocation; hint: no allocations were given to the "
        "interpreter "
        "(InterpretOptions::allocations)",
        address);
  }
  // Nearest buffer by distance to [begin, end).
  const Buffer* nearest = nullptr;
  uint64_t best = UINT64_MAX;
  for (const Buffer& buffer : buffers_) {
    uint64_t distance = address < buffer.begin  ? buffer.begin - address
                        : address >= buffer.end ? address - buffer.end + 1
                                                : 0;
    if (distance < best) {
      best = distance;
      nearest = &buffer;
    }
  }
  const auto offset = static_cast<int64_t>(address - nearest->begin);
  const auto bytes = static_cast<int64_t>(element_bytes);
  const auto count = static_cast<int64_t>((nearest->end - nearest->begin) / element_bytes);
  return absl::StrFormat(
      "address 0x%x is outside every allocation: element %d of \"%s\", which holds %d elements of "
      "%d bytes; hint: mask the lanes past the end",
      address, element_index(offset, bytes), nearest->name, count, element_bytes);
}

std::string MemoryMap::describe(uint64_t address, size_t element_bytes) const {
  const Buffer* buffer = find(address);
  if (buffer == nullptr) return absl::StrFormat("0x%x", address);
  return absl::StrFormat("element %d of \"%s\"", (address - buffer->begin) / element_bytes,
                         buffer->name);
}

}  // namespace monotile::dsl::interp
