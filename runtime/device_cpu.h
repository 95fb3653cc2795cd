// The CPU device: the interpreter's device, so the executor runs without a GPU. Device memory is
// host memory (a device address is the host address), copies are memcpy, host-mapped memory is
// plain memory, events record host time. Streams run work when it is enqueued, in order; a
// capturing stream records it instead, and replay runs the recording.
#pragma once

#include <memory>

#include "runtime/cpu_module.h"
#include "runtime/device.h"

namespace monotile::runtime {

// `loader` makes modules from code objects (interpreter_loader in interpreter_module.h runs DSL
// programs). Without one the device does everything but load_module, which says it cannot launch.
std::unique_ptr<Device> make_cpu_device(CpuModuleLoader loader = nullptr);

}  // namespace monotile::runtime
