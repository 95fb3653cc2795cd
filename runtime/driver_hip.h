// HipDriver: the HIP runtime (libamdhip64.so.6 or .so.5) opened at run time and every entry point
// the HIP device calls. A missing library or entry point is a Status saying so; check() turns a
// hipError_t into a Status with hipGetErrorName's name.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/driver_api_hip.h"
#include "support/shared_library.h"

namespace monotile::runtime {

struct HipDriver {
  SharedLibrary library;
  // Which hipDeviceProp_t layout hipGetDeviceProperties fills (R0600 when the runtime exports
  // hipGetDevicePropertiesR0600, else HIP 5's).
  hip_api::DevicePropLayout device_prop_layout = hip_api::kDevicePropR0000;
  std::string device_prop_symbol;

  hip_api::PFN_hipGetErrorName hipGetErrorName = nullptr;
  hip_api::PFN_hipInit hipInit = nullptr;
  hip_api::PFN_hipDriverGetVersion hipDriverGetVersion = nullptr;
  hip_api::PFN_hipRuntimeGetVersion hipRuntimeGetVersion = nullptr;
  hip_api::PFN_hipGetDeviceCount hipGetDeviceCount = nullptr;
  hip_api::PFN_hipSetDevice hipSetDevice = nullptr;
  hip_api::PFN_hipDeviceGetName hipDeviceGetName = nullptr;
  hip_api::PFN_hipDeviceTotalMem hipDeviceTotalMem = nullptr;
  hip_api::PFN_hipGetDeviceProperties hipGetDeviceProperties = nullptr;
  hip_api::PFN_hipDeviceSynchronize hipDeviceSynchronize = nullptr;
  hip_api::PFN_hipMalloc hipMalloc = nullptr;
  hip_api::PFN_hipFree hipFree = nullptr;
  hip_api::PFN_hipHostMalloc hipHostMalloc = nullptr;
  hip_api::PFN_hipHostGetDevicePointer hipHostGetDevicePointer = nullptr;
  hip_api::PFN_hipHostFree hipHostFree = nullptr;
  hip_api::PFN_hipMemcpyHtoD hipMemcpyHtoD = nullptr;
  hip_api::PFN_hipMemcpyDtoH hipMemcpyDtoH = nullptr;
  hip_api::PFN_hipMemcpyDtoD hipMemcpyDtoD = nullptr;
  hip_api::PFN_hipMemsetD8 hipMemsetD8 = nullptr;
  hip_api::PFN_hipMemcpyHtoDAsync hipMemcpyHtoDAsync = nullptr;
  hip_api::PFN_hipMemcpyDtoHAsync hipMemcpyDtoHAsync = nullptr;
  hip_api::PFN_hipMemcpyDtoDAsync hipMemcpyDtoDAsync = nullptr;
  hip_api::PFN_hipMemsetD8Async hipMemsetD8Async = nullptr;
  hip_api::PFN_hipStreamCreateWithFlags hipStreamCreateWithFlags = nullptr;
  hip_api::PFN_hipStreamDestroy hipStreamDestroy = nullptr;
  hip_api::PFN_hipStreamSynchronize hipStreamSynchronize = nullptr;
  hip_api::PFN_hipEventCreate hipEventCreate = nullptr;
  hip_api::PFN_hipEventDestroy hipEventDestroy = nullptr;
  hip_api::PFN_hipEventRecord hipEventRecord = nullptr;
  hip_api::PFN_hipEventSynchronize hipEventSynchronize = nullptr;
  hip_api::PFN_hipEventElapsedTime hipEventElapsedTime = nullptr;
  hip_api::PFN_hipModuleLoadData hipModuleLoadData = nullptr;
  hip_api::PFN_hipModuleUnload hipModuleUnload = nullptr;
  hip_api::PFN_hipModuleGetFunction hipModuleGetFunction = nullptr;
  hip_api::PFN_hipModuleLaunchKernel hipModuleLaunchKernel = nullptr;
  hip_api::PFN_hipStreamBeginCapture hipStreamBeginCapture = nullptr;
  hip_api::PFN_hipStreamEndCapture hipStreamEndCapture = nullptr;
  hip_api::PFN_hipGraphInstantiateWithFlags hipGraphInstantiateWithFlags = nullptr;
  hip_api::PFN_hipGraphLaunch hipGraphLaunch = nullptr;
  hip_api::PFN_hipGraphExecDestroy hipGraphExecDestroy = nullptr;
  hip_api::PFN_hipGraphDestroy hipGraphDestroy = nullptr;
  hip_api::PFN_hipIpcGetMemHandle hipIpcGetMemHandle = nullptr;
  hip_api::PFN_hipIpcOpenMemHandle hipIpcOpenMemHandle = nullptr;
  hip_api::PFN_hipIpcCloseMemHandle hipIpcCloseMemHandle = nullptr;

  // "hipErrorInvalidValue"; "hipError_t 9999" when the runtime has no name for it.
  std::string error_name(hip_api::hipError_t error) const;
  // OkStatus for hipSuccess, else driver_call_failed(code for `error`, call, subject, name).
  absl::Status check(hip_api::hipError_t error, std::string_view call,
                     std::string_view subject = {}) const;
};

// The absl code for a hipError_t, as cuda_status_code does for CUDA.
absl::StatusCode hip_status_code(hip_api::hipError_t error);

// The HIP runtime's library names, newest first.
std::vector<std::string> default_hip_library_names();

// Opens the first of `library_names` that dlopen accepts and resolves every entry point. Does not
// call hipInit. Errors: `no AMD HIP runtime: dlopen("libamdhip64.so.6") failed: ...; ...`.
absl::StatusOr<std::shared_ptr<const HipDriver>> load_hip_driver(
    const std::vector<std::string>& library_names = default_hip_library_names());

}  // namespace monotile::runtime
