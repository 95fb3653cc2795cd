// The CUDA device: an NVIDIA GPU through the driver API (libcuda.so.1, dlopen'ed; see
// driver_cuda.h), on the device's primary context, which every call makes current first so one
// thread can drive several GPUs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/device.h"
#include "runtime/discovery.h"

namespace monotile::runtime {

// Every NVIDIA GPU the driver reports. An error (NotFound unless the driver misbehaves) says why
// there is none: `no NVIDIA driver: dlopen("libcuda.so.1") failed: ...`, `NVIDIA driver ...
// present but cuInit failed: CUDA_ERROR_NO_DEVICE`, `... but no GPU behind it ...`.
absl::StatusOr<BackendDevices> open_cuda_devices(
    const std::vector<std::string>& library_names = {"libcuda.so.1"});

// The Target for an NVIDIA compute capability: sm_90a for 9.0, sm_100a for 10.0 (the
// arch-specific variant from sm_90 on, so wgmma and friends are available), sm_80 for 8.0.
absl::StatusOr<dsl::Target> cuda_target(int major, int minor);

}  // namespace monotile::runtime
