// Shape facts shared by the builder and the verifier: which tile sizes a layout can hold, and the
// text form of a shape used in messages ("[16, 128]", "[]" for a scalar).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace monotile::dsl {

// Every tile dimension is a power of two or a multiple of this: a lane then owns whole chunks of
// 16 elements (at least one 16-byte vector of any dtype), so the lowering guards whole chunks and
// never splits one at a tile's end.
inline constexpr int64_t kLayoutQuantum = 16;

inline bool is_power_of_two(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }
inline bool is_layout_size(int64_t n) {
  return is_power_of_two(n) || (n > 0 && n % kLayoutQuantum == 0);
}

std::string shape_str(const std::vector<int64_t>& shape);

// numpy broadcasting: the shape both broadcast to (dims aligned from the right, each pair equal or
// one of them 1), or false when they do not broadcast.
bool broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                      std::vector<int64_t>* result);

}  // namespace monotile::dsl
