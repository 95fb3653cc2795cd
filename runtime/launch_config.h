// LaunchConfig: the grid, block and dynamic shared memory of one kernel launch, and the text that
// names them in error messages ("grid 132x1x1, block 256x1x1, smem 0").
#pragma once

#include <cstdint>
#include <string>

namespace monotile::runtime {

struct Dim3 {
  uint32_t x = 1;
  uint32_t y = 1;
  uint32_t z = 1;
  uint64_t count() const { return uint64_t{x} * y * z; }
  friend bool operator==(const Dim3&, const Dim3&) = default;
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  uint32_t shared_memory_bytes = 0;  // dynamic shared memory (LDS) per block
  // The kernel waits for its grid dependency (dsl/ir.h's dependent launch), so it may start before
  // the previous kernel on its stream has ended: CUDA launches it with programmatic stream
  // serialization (kept as a programmatic edge by graph capture). HIP and the CPU device launch it
  // after its predecessor has ended, as any other.
  bool programmatic_dependency = false;
  friend bool operator==(const LaunchConfig&, const LaunchConfig&) = default;
};

// "132x1x1"
std::string describe(const Dim3& dims);
// "grid 132x1x1, block 256x1x1, smem 0", then ", programmatic" with programmatic_dependency
std::string describe(const LaunchConfig& config);

}  // namespace monotile::runtime
