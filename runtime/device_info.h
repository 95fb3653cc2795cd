// DeviceInfo: what discovery learns about one device, fixed for the device's lifetime.
#pragma once

#include <cstdint>
#include <string>

#include "dsl/target.h"

namespace monotile::runtime {

struct DeviceInfo {
  dsl::Vendor vendor = dsl::Vendor::kCpu;
  // The device's index among its vendor's devices as the driver numbers them.
  int ordinal = 0;
  // "NVIDIA H200", "AMD Instinct MI300X", "cpu interpreter".
  std::string name;
  // What code for it is compiled for: "sm_90a" for an H200 (the arch-specific variant, so wgmma is
  // available), "gfx942:sramecc+:xnack-" (gcnArchName) for an MI300X, "cpu".
  dsl::Target target = dsl::Target::cpu();
  // Streaming multiprocessors (NVIDIA), compute units (AMD), hardware threads (CPU).
  int compute_units = 0;
  // Device memory in bytes (host memory on the CPU device).
  int64_t memory_bytes = 0;
  // Most dynamic shared memory one block may use after opting in.
  int64_t max_shared_memory_per_block = 0;
  // "CUDA driver 13.0", "HIP runtime 6.2.41133", "interpreter".
  std::string driver;
};

// "nvidia device 0 \"NVIDIA H200\" (sm_90a)": a device as messages name it.
std::string describe(const DeviceInfo& info);

}  // namespace monotile::runtime
