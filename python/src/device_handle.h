// A device as the Python objects share it: the executor, its steps and the tensors it hands out
// keep it alive, and its DLPack device is what every tensor given to it must be on.
#pragma once

#include <memory>

#include "python/src/tensor_import.h"
#include "runtime/decode/launch_counting_device.h"
#include "runtime/device.h"

namespace monotile::python {

struct DeviceHandle {
  std::unique_ptr<runtime::Device> device;
  TensorDevice tensors;  // where its memory is, as DLPack says it
  // Set for the launch-counting device (benchmarks and tests of the host path): launches are
  // counted, not run.
  runtime::decode::LaunchCountingDevice* counting = nullptr;
};

// The CPU interpreter's device (kernels run as interpreter programs).
std::shared_ptr<DeviceHandle> make_cpu_handle();
// The GPU a DLPack device names (CUDA or ROCm, by ordinal). RuntimeError naming why there is none.
std::shared_ptr<DeviceHandle> make_gpu_handle(TensorDevice device);

}  // namespace monotile::python
