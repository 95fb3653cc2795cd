// What the CPU device launches: a CpuModule of CpuKernels, made by a CpuModuleLoader from a code
// object's bytes. The interpreter plugs in here (a kernel wraps an interpreter program); the Device
// interface does not change. A kernel runs its whole grid before returning and touches only the
// memory the device lists as live.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/launch_config.h"

namespace monotile::runtime {

// One live allocation of the CPU device (a buffer or a host-mapped buffer).
struct CpuAllocation {
  const void* base = nullptr;
  size_t bytes = 0;
  std::string name;  // "buffer #3 (4096 bytes)", for out-of-bounds messages
};

class CpuKernel {
 public:
  virtual ~CpuKernel() = default;
  // The size in bytes of each parameter's value, in order. The device copies that many bytes from
  // each args[i] when the launch is enqueued (as a GPU driver does), so a captured launch replays
  // with the values it was captured with.
  virtual std::span<const size_t> parameter_sizes() const = 0;
  // Runs the whole grid. `args[i]` points at parameter i's value; `memory` lists every live
  // allocation of the device, the only memory the kernel may touch.
  virtual absl::Status run(const LaunchConfig& config, void** args,
                           std::span<const CpuAllocation> memory) = 0;
};

class CpuModule {
 public:
  virtual ~CpuModule() = default;
  // The kernel called `name`, owned by the module; NotFound naming the kernels it has otherwise.
  virtual absl::StatusOr<CpuKernel*> kernel(std::string_view name) = 0;
};

// Turns a code object's bytes into a module; `label` names it in messages.
using CpuModuleLoader = std::function<absl::StatusOr<std::unique_ptr<CpuModule>>(
    std::string_view code_object, std::string_view label)>;

}  // namespace monotile::runtime
