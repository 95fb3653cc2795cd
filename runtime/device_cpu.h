// The CPU device: the interpreter's device, so the executor runs without a GPU. Device memory is
// host memory (a device address is the host address), copies are memcpy, host-mapped memory is
// plain memory, events record host time. Streams run work when it is enqueued, in order; a
// capturing stream records it instead, and replay runs the recording.
#pragma once

#include <memory>
#include <string_view>

#include "runtime/cpu_module.h"
#include "runtime/device.h"

namespace monotile::runtime {

// `loader` makes modules from code objects (interpreter_loader in interpreter_module.h runs DSL
// programs). Without one the device does everything but load_module, which says it cannot launch.
std::unique_ptr<Device> make_cpu_device(CpuModuleLoader loader = nullptr);

// Host memory the CPU device did not allocate (a host's own tensors: numpy arrays, torch CPU
// tensors) made reachable by its copies and kernels, as a GPU driver's host registration makes
// host memory reachable: [base, base + bytes), named `name` in out-of-bounds messages, until
// unregister_host_memory(device, base). Registering a base again counts: each registration needs
// its unregister, and the range is the largest registered. FailedPrecondition for a device that is
// not make_cpu_device's; InvalidArgument for 0 bytes, or a range overlapping one the device
// allocated.
absl::Status register_host_memory(Device& device, const void* base, size_t bytes,
                                  std::string_view name);
// FailedPrecondition when `base` is not registered.
absl::Status unregister_host_memory(Device& device, const void* base);

}  // namespace monotile::runtime
