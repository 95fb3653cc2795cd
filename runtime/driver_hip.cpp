// Loading the HIP runtime and naming its errors; see driver_hip.h.
#include "runtime/driver_hip.h"

#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "runtime/driver_error.h"
#include "support/status_macros.h"

namespace monotile::runtime {
namespace {

template <typename Fn>
absl::Status bind_one(const SharedLibrary& library, const char* symbol, Fn& out) {
  absl::Status status = library.bind(symbol, out);
  if (status.ok()) return status;
  return absl::NotFoundError(absl::StrCat("AMD HIP runtime ", library.name(),
                                          " lacks an entry point monotile needs: ",
                                          status.message(), "; hint: install ROCm 5.2 or newer"));
}

absl::Status bind_all(HipDriver& d) {
  const SharedLibrary& l = d.library;
  MT_RETURN_IF_ERROR(bind_one(l, "hipGetErrorName", d.hipGetErrorName));
  MT_RETURN_IF_ERROR(bind_one(l, "hipInit", d.hipInit));
  MT_RETURN_IF_ERROR(bind_one(l, "hipDriverGetVersion", d.hipDriverGetVersion));
  MT_RETURN_IF_ERROR(bind_one(l, "hipRuntimeGetVersion", d.hipRuntimeGetVersion));
  MT_RETURN_IF_ERROR(bind_one(l, "hipGetDeviceCount", d.hipGetDeviceCount));
  MT_RETURN_IF_ERROR(bind_one(l, "hipSetDevice", d.hipSetDevice));
  MT_RETURN_IF_ERROR(bind_one(l, "hipDeviceGetName", d.hipDeviceGetName));
  MT_RETURN_IF_ERROR(bind_one(l, "hipDeviceTotalMem", d.hipDeviceTotalMem));
  if (l.bind("hipGetDevicePropertiesR0600", d.hipGetDeviceProperties).ok()) {
    d.device_prop_layout = hip_api::kDevicePropR0600;
    d.device_prop_symbol = "hipGetDevicePropertiesR0600";
  } else {
    MT_RETURN_IF_ERROR(bind_one(l, "hipGetDeviceProperties", d.hipGetDeviceProperties));
    d.device_prop_layout = hip_api::kDevicePropR0000;
    d.device_prop_symbol = "hipGetDeviceProperties";
  }
  MT_RETURN_IF_ERROR(bind_one(l, "hipDeviceSynchronize", d.hipDeviceSynchronize));
  MT_RETURN_IF_ERROR(bind_one(l, "hipMalloc", d.hipMalloc));
  MT_RETURN_IF_ERROR(bind_one(l, "hipFree", d.hipFree));
  MT_RETURN_IF_ERROR(bind_one(l, "hipHostMalloc", d.hipHostMalloc));
  MT_RETURN_IF_ERROR(bind_one(l, "hipHostGetDevicePointer", d.hipHostGetDevicePointer));
  MT_RETURN_IF_ERROR(bind_one(l, "hipHostFree", d.hipHostFree));
  MT_RETURN_IF_ERROR(bind_one(l, "hipMemcpyHtoD", d.hipMemcpyHtoD));
  MT_RETURN_IF_ERROR(bind_one(l, "hipMemcpyDtoH", d.hipMemcpyDtoH));
  MT_RETURN_IF_ERROR(bind_one(l, "hipMemcpyDtoD", d.hipMemcpyDtoD));
  MT_RETURN_IF_ERROR(bind_one(l, "hipMemsetD8", d.hipMemsetD8));
  MT_RETURN_IF_ERROR(bind_one(l, "hipMemcpyHtoDAsync", d.hipMemcpyHtoDAsync));
  MT_RETURN_IF_ERROR(bind_one(l, "hipMemcpyDtoHAsync", d.hipMemcpyDtoHAsync));
  MT_RETURN_IF_ERROR(bind_one(l, "hipMemcpyDtoDAsync", d.hipMemcpyDtoDAsync));
  MT_RETURN_IF_ERROR(bind_one(l, "hipMemsetD8Async", d.hipMemsetD8Async));
  MT_RETURN_IF_ERROR(bind_one(l, "hipStreamCreateWithFlags", d.hipStreamCreateWithFlags));
  MT_RETURN_IF_ERROR(bind_one(l, "hipStreamDestroy", d.hipStreamDestroy));
  MT_RETURN_IF_ERROR(bind_one(l, "hipStreamSynchronize", d.hipStreamSynchronize));
  MT_RETURN_IF_ERROR(bind_one(l, "hipEventCreate", d.hipEventCreate));
  MT_RETURN_IF_ERROR(bind_one(l, "hipEventDestroy", d.hipEventDestroy));
  MT_RETURN_IF_ERROR(bind_one(l, "hipEventRecord", d.hipEventRecord));
  MT_RETURN_IF_ERROR(bind_one(l, "hipEventSynchronize", d.hipEventSynchronize));
  MT_RETURN_IF_ERROR(bind_one(l, "hipEventElapsedTime", d.hipEventElapsedTime));
  MT_RETURN_IF_ERROR(bind_one(l, "hipModuleLoadData", d.hipModuleLoadData));
  MT_RETURN_IF_ERROR(bind_one(l, "hipModuleUnload", d.hipModuleUnload));
  MT_RETURN_IF_ERROR(bind_one(l, "hipModuleGetFunction", d.hipModuleGetFunction));
  MT_RETURN_IF_ERROR(bind_one(l, "hipModuleLaunchKernel", d.hipModuleLaunchKernel));
  MT_RETURN_IF_ERROR(bind_one(l, "hipStreamBeginCapture", d.hipStreamBeginCapture));
  MT_RETURN_IF_ERROR(bind_one(l, "hipStreamEndCapture", d.hipStreamEndCapture));
  MT_RETURN_IF_ERROR(bind_one(l, "hipGraphInstantiateWithFlags", d.hipGraphInstantiateWithFlags));
  MT_RETURN_IF_ERROR(bind_one(l, "hipGraphLaunch", d.hipGraphLaunch));
  MT_RETURN_IF_ERROR(bind_one(l, "hipGraphExecDestroy", d.hipGraphExecDestroy));
  MT_RETURN_IF_ERROR(bind_one(l, "hipGraphDestroy", d.hipGraphDestroy));
  MT_RETURN_IF_ERROR(bind_one(l, "hipIpcGetMemHandle", d.hipIpcGetMemHandle));
  MT_RETURN_IF_ERROR(bind_one(l, "hipIpcOpenMemHandle", d.hipIpcOpenMemHandle));
  MT_RETURN_IF_ERROR(bind_one(l, "hipIpcCloseMemHandle", d.hipIpcCloseMemHandle));
  return absl::OkStatus();
}

}  // namespace

std::string HipDriver::error_name(hip_api::hipError_t error) const {
  const char* name = hipGetErrorName != nullptr ? hipGetErrorName(error) : nullptr;
  if (name != nullptr && *name != '\0') return name;
  return absl::StrCat("hipError_t ", error);
}

absl::Status HipDriver::check(hip_api::hipError_t error, std::string_view call,
                              std::string_view subject) const {
  if (error == hip_api::hipSuccess) return absl::OkStatus();
  return driver_call_failed(hip_status_code(error), call, subject, error_name(error));
}

absl::StatusCode hip_status_code(hip_api::hipError_t error) {
  switch (error) {
    case hip_api::hipSuccess: return absl::StatusCode::kOk;
    case hip_api::hipErrorOutOfMemory: return absl::StatusCode::kResourceExhausted;
    case hip_api::hipErrorInvalidValue: return absl::StatusCode::kInvalidArgument;
    case hip_api::hipErrorNoDevice: return absl::StatusCode::kNotFound;
    case hip_api::hipErrorInvalidDevice: return absl::StatusCode::kNotFound;
    case hip_api::hipErrorNotFound: return absl::StatusCode::kNotFound;
    default: return absl::StatusCode::kInternal;
  }
}

std::vector<std::string> default_hip_library_names() {
  return {"libamdhip64.so.6", "libamdhip64.so.5", "libamdhip64.so"};
}

absl::StatusOr<std::shared_ptr<const HipDriver>> load_hip_driver(
    const std::vector<std::string>& library_names) {
  absl::StatusOr<SharedLibrary> library = SharedLibrary::open(library_names);
  if (!library.ok()) {
    return absl::NotFoundError(absl::StrCat("no AMD HIP runtime: ", library.status().message()));
  }
  auto driver = std::make_shared<HipDriver>();
  driver->library = *std::move(library);
  MT_RETURN_IF_ERROR(bind_all(*driver));
  return std::shared_ptr<const HipDriver>(std::move(driver));
}

}  // namespace monotile::runtime
