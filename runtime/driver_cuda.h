// CudaDriver: libcuda.so.1 opened at run time and every entry point the CUDA device calls,
// resolved by exact symbol name (the _v2 ABI where the driver exports one). A missing library or
// entry point is a Status saying so; check() turns a CUresult into a Status with the driver's name.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/driver_api_cuda.h"
#include "runtime/launch_config.h"
#include "support/shared_library.h"

namespace monotile::runtime {

struct CudaDriver {
  SharedLibrary library;
  cuda_api::PFN_cuGetErrorName cuGetErrorName = nullptr;
  cuda_api::PFN_cuInit cuInit = nullptr;
  cuda_api::PFN_cuDriverGetVersion cuDriverGetVersion = nullptr;
  cuda_api::PFN_cuDeviceGetCount cuDeviceGetCount = nullptr;
  cuda_api::PFN_cuDeviceGet cuDeviceGet = nullptr;
  cuda_api::PFN_cuDeviceGetName cuDeviceGetName = nullptr;
  cuda_api::PFN_cuDeviceGetAttribute cuDeviceGetAttribute = nullptr;
  cuda_api::PFN_cuDeviceTotalMem_v2 cuDeviceTotalMem = nullptr;
  cuda_api::PFN_cuDevicePrimaryCtxRetain cuDevicePrimaryCtxRetain = nullptr;
  cuda_api::PFN_cuDevicePrimaryCtxRelease_v2 cuDevicePrimaryCtxRelease = nullptr;
  cuda_api::PFN_cuCtxSetCurrent cuCtxSetCurrent = nullptr;
  cuda_api::PFN_cuCtxSynchronize cuCtxSynchronize = nullptr;
  cuda_api::PFN_cuMemAlloc_v2 cuMemAlloc = nullptr;
  cuda_api::PFN_cuMemFree_v2 cuMemFree = nullptr;
  cuda_api::PFN_cuMemHostAlloc cuMemHostAlloc = nullptr;
  cuda_api::PFN_cuMemHostGetDevicePointer_v2 cuMemHostGetDevicePointer = nullptr;
  cuda_api::PFN_cuMemFreeHost cuMemFreeHost = nullptr;
  cuda_api::PFN_cuMemcpyHtoD_v2 cuMemcpyHtoD = nullptr;
  cuda_api::PFN_cuMemcpyDtoH_v2 cuMemcpyDtoH = nullptr;
  cuda_api::PFN_cuMemcpyDtoD_v2 cuMemcpyDtoD = nullptr;
  cuda_api::PFN_cuIpcGetMemHandle cuIpcGetMemHandle = nullptr;
  cuda_api::PFN_cuIpcOpenMemHandle_v2 cuIpcOpenMemHandle = nullptr;
  cuda_api::PFN_cuIpcCloseMemHandle cuIpcCloseMemHandle = nullptr;
  cuda_api::PFN_cuMemsetD8_v2 cuMemsetD8 = nullptr;
  cuda_api::PFN_cuMemcpyHtoDAsync_v2 cuMemcpyHtoDAsync = nullptr;
  cuda_api::PFN_cuMemcpyDtoHAsync_v2 cuMemcpyDtoHAsync = nullptr;
  cuda_api::PFN_cuMemcpyDtoDAsync_v2 cuMemcpyDtoDAsync = nullptr;
  cuda_api::PFN_cuMemsetD8Async cuMemsetD8Async = nullptr;
  cuda_api::PFN_cuStreamCreate cuStreamCreate = nullptr;
  cuda_api::PFN_cuStreamDestroy_v2 cuStreamDestroy = nullptr;
  cuda_api::PFN_cuStreamSynchronize cuStreamSynchronize = nullptr;
  cuda_api::PFN_cuEventCreate cuEventCreate = nullptr;
  cuda_api::PFN_cuEventDestroy_v2 cuEventDestroy = nullptr;
  cuda_api::PFN_cuEventRecord cuEventRecord = nullptr;
  cuda_api::PFN_cuEventSynchronize cuEventSynchronize = nullptr;
  cuda_api::PFN_cuEventElapsedTime cuEventElapsedTime = nullptr;
  cuda_api::PFN_cuModuleLoadData cuModuleLoadData = nullptr;
  cuda_api::PFN_cuModuleUnload cuModuleUnload = nullptr;
  cuda_api::PFN_cuModuleGetFunction cuModuleGetFunction = nullptr;
  cuda_api::PFN_cuFuncSetAttribute cuFuncSetAttribute = nullptr;
  cuda_api::PFN_cuLaunchKernel cuLaunchKernel = nullptr;
  cuda_api::PFN_cuLaunchKernelEx cuLaunchKernelEx = nullptr;
  cuda_api::PFN_cuStreamBeginCapture_v2 cuStreamBeginCapture = nullptr;
  cuda_api::PFN_cuStreamEndCapture cuStreamEndCapture = nullptr;
  cuda_api::PFN_cuGraphInstantiateWithFlags cuGraphInstantiateWithFlags = nullptr;
  cuda_api::PFN_cuGraphLaunch cuGraphLaunch = nullptr;
  cuda_api::PFN_cuGraphExecDestroy cuGraphExecDestroy = nullptr;
  cuda_api::PFN_cuGraphDestroy cuGraphDestroy = nullptr;

  // "CUDA_ERROR_INVALID_VALUE"; "CUresult 9999" when the driver has no name for it.
  std::string error_name(cuda_api::CUresult result) const;
  // OkStatus for CUDA_SUCCESS, else driver_call_failed(code for `result`, call, subject, name).
  absl::Status check(cuda_api::CUresult result, std::string_view call,
                     std::string_view subject = {}) const;
};

// The absl code for a CUresult: out of memory -> ResourceExhausted, invalid value ->
// InvalidArgument, no device -> NotFound, anything else -> Internal.
absl::StatusCode cuda_status_code(cuda_api::CUresult result);

// One launch of `function` on `stream` through cuLaunchKernelEx with programmatic stream
// serialization allowed (LaunchConfig::programmatic_dependency): the kernel's programs may start
// once every program of the previous kernel on the stream has called launch_dependents or ended,
// and they wait for its end with griddepcontrol.wait. Stream capture keeps it as a programmatic
// edge (CUDA 12.3 and later).
cuda_api::CUresult launch_programmatic(const CudaDriver& driver, cuda_api::CUfunction function,
                                       const LaunchConfig& config, cuda_api::CUstream stream,
                                       void** args);

// Opens the first of `library_names` that dlopen accepts and resolves every entry point. Does not
// call cuInit. Errors: `no NVIDIA driver: dlopen("libcuda.so.1") failed: <dlerror>` and
// `NVIDIA driver libcuda.so.1 lacks entry point "...": ...; hint: ...`.
absl::StatusOr<std::shared_ptr<const CudaDriver>> load_cuda_driver(
    const std::vector<std::string>& library_names = {"libcuda.so.1"});

}  // namespace monotile::runtime
