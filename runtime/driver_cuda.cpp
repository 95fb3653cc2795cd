// Loading libcuda.so.1 and naming its errors; see driver_cuda.h.
#include "runtime/driver_cuda.h"

#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "runtime/driver_error.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::runtime {
namespace {

// Binds `out` to the first of `symbols` the library exports (newest ABI first).
template <typename Fn>
absl::Status bind_any(const SharedLibrary& library, std::initializer_list<const char*> symbols,
                      Fn& out) {
  absl::Status first_error;
  for (const char* symbol : symbols) {
    absl::Status status = library.bind(symbol, out);
    if (status.ok()) return status;
    if (first_error.ok()) first_error = status;
  }
  return absl::NotFoundError(absl::StrCat(
      "NVIDIA driver ", library.name(), " lacks an entry point monotile needs: ",
      first_error.message(), "; hint: install an NVIDIA driver for CUDA 12 or newer"));
}

absl::Status bind_all(CudaDriver& d) {
  const SharedLibrary& l = d.library;
  MT_RETURN_IF_ERROR(bind_any(l, {"cuGetErrorName"}, d.cuGetErrorName));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuInit"}, d.cuInit));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuDriverGetVersion"}, d.cuDriverGetVersion));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuDeviceGetCount"}, d.cuDeviceGetCount));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuDeviceGet"}, d.cuDeviceGet));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuDeviceGetName"}, d.cuDeviceGetName));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuDeviceGetAttribute"}, d.cuDeviceGetAttribute));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuDeviceTotalMem_v2"}, d.cuDeviceTotalMem));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuDevicePrimaryCtxRetain"}, d.cuDevicePrimaryCtxRetain));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuDevicePrimaryCtxRelease_v2"}, d.cuDevicePrimaryCtxRelease));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuCtxSetCurrent"}, d.cuCtxSetCurrent));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuCtxSynchronize"}, d.cuCtxSynchronize));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuMemAlloc_v2"}, d.cuMemAlloc));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuMemFree_v2"}, d.cuMemFree));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuMemHostAlloc"}, d.cuMemHostAlloc));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuMemHostGetDevicePointer_v2"}, d.cuMemHostGetDevicePointer));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuMemFreeHost"}, d.cuMemFreeHost));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuMemcpyHtoD_v2"}, d.cuMemcpyHtoD));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuMemcpyDtoH_v2"}, d.cuMemcpyDtoH));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuMemcpyDtoD_v2"}, d.cuMemcpyDtoD));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuMemsetD8_v2"}, d.cuMemsetD8));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuIpcGetMemHandle"}, d.cuIpcGetMemHandle));
  MT_RETURN_IF_ERROR(
      bind_any(l, {"cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle"}, d.cuIpcOpenMemHandle));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuIpcCloseMemHandle"}, d.cuIpcCloseMemHandle));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuMemcpyHtoDAsync_v2"}, d.cuMemcpyHtoDAsync));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuMemcpyDtoHAsync_v2"}, d.cuMemcpyDtoHAsync));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuMemcpyDtoDAsync_v2"}, d.cuMemcpyDtoDAsync));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuMemsetD8Async"}, d.cuMemsetD8Async));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuStreamCreate"}, d.cuStreamCreate));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuStreamDestroy_v2"}, d.cuStreamDestroy));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuStreamSynchronize"}, d.cuStreamSynchronize));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuEventCreate"}, d.cuEventCreate));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuEventDestroy_v2"}, d.cuEventDestroy));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuEventRecord"}, d.cuEventRecord));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuEventSynchronize"}, d.cuEventSynchronize));
  // CUDA 12.8 added the _v2 (cuda.h maps the name to it); older drivers have only the first.
  MT_RETURN_IF_ERROR(
      bind_any(l, {"cuEventElapsedTime_v2", "cuEventElapsedTime"}, d.cuEventElapsedTime));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuModuleLoadData"}, d.cuModuleLoadData));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuModuleUnload"}, d.cuModuleUnload));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuModuleGetFunction"}, d.cuModuleGetFunction));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuFuncSetAttribute"}, d.cuFuncSetAttribute));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuLaunchKernel"}, d.cuLaunchKernel));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuLaunchKernelEx"}, d.cuLaunchKernelEx));  // CUDA 12.0
  MT_RETURN_IF_ERROR(bind_any(l, {"cuStreamBeginCapture_v2"}, d.cuStreamBeginCapture));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuStreamEndCapture"}, d.cuStreamEndCapture));
  MT_RETURN_IF_ERROR(
      bind_any(l, {"cuGraphInstantiateWithFlags"}, d.cuGraphInstantiateWithFlags));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuGraphLaunch"}, d.cuGraphLaunch));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuGraphExecDestroy"}, d.cuGraphExecDestroy));
  MT_RETURN_IF_ERROR(bind_any(l, {"cuGraphDestroy"}, d.cuGraphDestroy));
  return absl::OkStatus();
}

}  // namespace

std::string CudaDriver::error_name(cuda_api::CUresult result) const {
  const char* name = nullptr;
  if (cuGetErrorName != nullptr && cuGetErrorName(result, &name) == cuda_api::CUDA_SUCCESS &&
      name != nullptr) {
    return name;
  }
  return absl::StrCat("CUresult ", result);
}

absl::Status CudaDriver::check(cuda_api::CUresult result, std::string_view call,
                               std::string_view subject) const {
  if (result == cuda_api::CUDA_SUCCESS) return absl::OkStatus();
  return driver_call_failed(cuda_status_code(result), call, subject, error_name(result));
}

absl::StatusCode cuda_status_code(cuda_api::CUresult result) {
  switch (result) {
    case cuda_api::CUDA_SUCCESS: return absl::StatusCode::kOk;
    case cuda_api::CUDA_ERROR_OUT_OF_MEMORY: return absl::StatusCode::kResourceExhausted;
    case cuda_api::CUDA_ERROR_INVALID_VALUE: return absl::StatusCode::kInvalidArgument;
    case cuda_api::CUDA_ERROR_NO_DEVICE: return absl::StatusCode::kNotFound;
    case cuda_api::CUDA_ERROR_NOT_FOUND: return absl::StatusCode::kNotFound;
    default: return absl::StatusCode::kInternal;
  }
}

cuda_api::CUresult launch_programmatic(const CudaDriver& driver, cuda_api::CUfunction function,
                                       const LaunchConfig& config, cuda_api::CUstream stream, void** args) {
  cuda_api::CUlaunchAttribute attribute{};
  attribute.id = cuda_api::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
  attribute.value.programmaticStreamSerializationAllowed = 1;
  cuda_api::CUlaunchConfig launch{};
  launch.gridDimX = config.grid.x;
  launch.gridDimY = config.grid.y;
  launch.gridDimZ = config.grid.z;
  launch.blockDimX = config.block.x;
  launch.blockDimY = config.block.y;
  launch.blockDimZ = config.block.z;
  launch.sharedMemBytes = config.shared_memory_bytes;
  launch.hStream = stream;
  launch.attrs = &attribute;
  launch.numAttrs = 1;
  return driver.cuLaunchKernelEx(&launch, function, args, nullptr);
}

absl::StatusOr<std::shared_ptr<const CudaDriver>> load_cuda_driver(
    const std::vector<std::string>& library_names) {
  absl::StatusOr<SharedLibrary> library = SharedLibrary::open(library_names);
  if (!library.ok()) {
    return absl::NotFoundError(absl::StrCat("no NVIDIA driver: ", library.status().message()));
  }
  auto driver = std::make_shared<CudaDriver>();
  driver->library = *std::move(library);
  MT_RETURN_IF_ERROR(bind_all(*driver));
  return std::shared_ptr<const CudaDriver>(std::move(driver));
}

}  // namespace monotile::runtime
