// What the layer kernels' builds (K1, K2) share: refusing a build at the caller's line, the suffix
// that keeps names of builds with non-default scalars distinct, the program's parameter names, and
// a scratch buffer laid out as aligned views.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "dsl/ir.h"
#include "support/source_location.h"

namespace monotile::kernels::k3 {

// Throws the DSL's Error at `loc` (the caller's line) unless `ok`.
void require(bool ok, const SourceLocation& loc, const std::string& kernel, const std::string& what,
             const std::string& expected, const std::string& actual, const std::string& hint);

// "_x" and 8 hex digits of an FNV-1a fold of the floats' bits, then the integers: names stay short
// and builds that differ in a scalar stay distinct.
std::string scalar_suffix(std::initializer_list<float> floats, std::initializer_list<int64_t> integers);

std::vector<std::string> parameter_names(const dsl::Program& program);

// The least power of two >= n (1 for n <= 1): tile extents and arrival spans.
inline int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

// Views into one buffer, each starting 256-byte aligned, in the order they are taken.
class ScratchLayout {
 public:
  int64_t take(int64_t bytes) {
    const int64_t offset = size_;
    size_ += (bytes + 255) / 256 * 256;
    return offset;
  }
  int64_t size() const { return size_; }

 private:
  int64_t size_ = 0;
};

}  // namespace monotile::kernels::k3
