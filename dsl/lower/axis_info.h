// What axis analysis knows about one value, per dim: contiguity (values run +1 along the dim in
// aligned runs of this length), divisibility (the first value of each run is a multiple of it; bytes
// for pointers) and constancy (aligned runs of this length hold equal values), plus an integer range.
// Scalars carry one entry (contiguity 1, constancy 1). Every field is a power of two and conservative.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace monotile::dsl::lower {

inline constexpr int64_t kMaxDivisibility = int64_t{1} << 30;

struct AxisInfo {
  std::vector<int64_t> contiguity{1};
  std::vector<int64_t> divisibility{1};
  std::vector<int64_t> constancy{1};
  std::optional<std::pair<int64_t, int64_t>> range;  // inclusive bounds of an integer value

  bool known_true() const { return range && range->first == 1 && range->second == 1; }
  bool known_false() const { return range && range->first == 0 && range->second == 0; }
  std::string str() const;  // "contig [1, 8] div [16, 16] const [1, 1] range [0, 7]"
  friend bool operator==(const AxisInfo&, const AxisInfo&) = default;
};

}  // namespace monotile::dsl::lower
