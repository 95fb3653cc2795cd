// The CUDA device (see device_cuda.h): GpuDevice (device_gpu.h) on the CUDA driver table, and
// discovery, which reads each device's facts through cuDeviceGetAttribute.
#include "runtime/device_cuda.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "runtime/device_gpu.h"
#include "runtime/driver_cuda.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::runtime {
namespace {

using namespace cuda_api;  // NOLINT: the driver's names read best unqualified here

// The CUDA driver for GpuDevice. Entry points are named by the exported symbol (the _v2 ABI where
// the driver has one); device addresses are integers (CUdeviceptr).
struct CudaApi {
  using Driver = CudaDriver;
  // CUDA works through contexts: the device's primary context, retained at opening and released
  // with the device, is made current before every call.
  struct Context {
    CUdevice device = 0;
    CUcontext context = nullptr;
  };
  using Address = CUdeviceptr;
  using StreamHandle = CUstream;
  using EventHandle = CUevent;
  using ModuleHandle = CUmodule;
  using FunctionHandle = CUfunction;
  using GraphHandle = CUgraph;
  using GraphExecHandle = CUgraphExec;

  static absl::Status make_current(const CudaDriver& d, const Context& c, const DeviceInfo& info) {
    // Every launch makes its context current: the device's description is written only for an error.
    const CUresult result = d.cuCtxSetCurrent(c.context);
    if (result == CUDA_SUCCESS) return absl::OkStatus();
    return d.check(result, "cuCtxSetCurrent", describe(info));
  }
  static absl::Status release_context(const CudaDriver& d, const Context& c) {
    return d.check(d.cuDevicePrimaryCtxRelease(c.device), "cuDevicePrimaryCtxRelease_v2");
  }

  // Pinned memory visible to every context and mapped into the device's address space; the vendors
  // name (and number) these flags each their own way, as they do the stream and capture flags.
  static constexpr unsigned kHostMappedFlags = kMemHostAllocPortable | kMemHostAllocDeviceMap;
  static constexpr unsigned kStreamNonBlocking = CU_STREAM_NON_BLOCKING;
  static constexpr CUstreamCaptureMode kCaptureThreadLocal = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  // NVIDIA caps dynamic shared memory at 48 KiB unless the kernel opts in to more, per function.
  static constexpr bool kSharedMemoryOptIn = true;
  static constexpr EntryPoint set_max_dynamic_shared_memory{
      +[](const CudaDriver& d, CUfunction function, int bytes) {
        return d.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    bytes);
      },
      "cuFuncSetAttribute"};

  static constexpr EntryPoint allocate{&CudaDriver::cuMemAlloc, "cuMemAlloc_v2"};
  static constexpr EntryPoint free_buffer{&CudaDriver::cuMemFree, "cuMemFree_v2"};
  static constexpr EntryPoint host_allocate{&CudaDriver::cuMemHostAlloc, "cuMemHostAlloc"};
  static constexpr EntryPoint host_device_pointer{&CudaDriver::cuMemHostGetDevicePointer,
                                                  "cuMemHostGetDevicePointer_v2"};
  static constexpr EntryPoint host_free{&CudaDriver::cuMemFreeHost, "cuMemFreeHost"};
  static constexpr EntryPoint copy_to_device{&CudaDriver::cuMemcpyHtoD, "cuMemcpyHtoD_v2"};
  static constexpr EntryPoint copy_to_host{&CudaDriver::cuMemcpyDtoH, "cuMemcpyDtoH_v2"};
  static constexpr EntryPoint copy_on_device{&CudaDriver::cuMemcpyDtoD, "cuMemcpyDtoD_v2"};
  static constexpr EntryPoint fill_bytes{&CudaDriver::cuMemsetD8, "cuMemsetD8_v2"};
  static constexpr EntryPoint copy_to_device_async{&CudaDriver::cuMemcpyHtoDAsync,
                                                   "cuMemcpyHtoDAsync_v2"};
  static constexpr EntryPoint copy_to_host_async{&CudaDriver::cuMemcpyDtoHAsync,
                                                 "cuMemcpyDtoHAsync_v2"};
  static constexpr EntryPoint copy_on_device_async{&CudaDriver::cuMemcpyDtoDAsync,
                                                   "cuMemcpyDtoDAsync_v2"};
  static constexpr EntryPoint fill_bytes_async{&CudaDriver::cuMemsetD8Async, "cuMemsetD8Async"};
  static constexpr EntryPoint stream_create{&CudaDriver::cuStreamCreate, "cuStreamCreate"};
  static constexpr EntryPoint stream_destroy{&CudaDriver::cuStreamDestroy, "cuStreamDestroy_v2"};
  static constexpr EntryPoint stream_synchronize{&CudaDriver::cuStreamSynchronize,
                                                 "cuStreamSynchronize"};
  static constexpr EntryPoint device_synchronize{&CudaDriver::cuCtxSynchronize,
                                                 "cuCtxSynchronize"};
  // CUDA's event creation takes flags, HIP's does not: the default (timing) event.
  static constexpr EntryPoint event_create{
      +[](const CudaDriver& d, CUevent* event) { return d.cuEventCreate(event, CU_EVENT_DEFAULT); },
      "cuEventCreate"};
  static constexpr EntryPoint event_destroy{&CudaDriver::cuEventDestroy, "cuEventDestroy_v2"};
  static constexpr EntryPoint event_record{&CudaDriver::cuEventRecord, "cuEventRecord"};
  static constexpr EntryPoint event_synchronize{&CudaDriver::cuEventSynchronize,
                                                "cuEventSynchronize"};
  static constexpr EntryPoint event_elapsed_time{&CudaDriver::cuEventElapsedTime,
                                                 "cuEventElapsedTime"};
  static constexpr EntryPoint module_load{&CudaDriver::cuModuleLoadData, "cuModuleLoadData"};
  static constexpr EntryPoint module_unload{&CudaDriver::cuModuleUnload, "cuModuleUnload"};
  static constexpr EntryPoint module_function{&CudaDriver::cuModuleGetFunction,
                                              "cuModuleGetFunction"};
  static constexpr EntryPoint launch{&CudaDriver::cuLaunchKernel, "cuLaunchKernel"};
  // A kernel that waits for its grid dependency may start before its predecessor ends (sm_90+).
  static constexpr bool kProgrammaticLaunch = true;
  static constexpr EntryPoint launch_programmatic{&runtime::launch_programmatic, "cuLaunchKernelEx"};
  static constexpr EntryPoint begin_capture{&CudaDriver::cuStreamBeginCapture,
                                            "cuStreamBeginCapture_v2"};
  static constexpr EntryPoint end_capture{&CudaDriver::cuStreamEndCapture, "cuStreamEndCapture"};
  static constexpr EntryPoint graph_instantiate{&CudaDriver::cuGraphInstantiateWithFlags,
                                                "cuGraphInstantiateWithFlags"};
  static constexpr EntryPoint graph_launch{&CudaDriver::cuGraphLaunch, "cuGraphLaunch"};
  static constexpr EntryPoint graph_exec_destroy{&CudaDriver::cuGraphExecDestroy,
                                                 "cuGraphExecDestroy"};
  static constexpr EntryPoint graph_destroy{&CudaDriver::cuGraphDestroy, "cuGraphDestroy"};
  // Peer memory: a buffer's IPC handle, opened in another process (peer access enabled lazily).
  using IpcHandle = CUipcMemHandle;
  static constexpr EntryPoint ipc_get_handle{&CudaDriver::cuIpcGetMemHandle, "cuIpcGetMemHandle"};
  static constexpr EntryPoint ipc_open{
      +[](const CudaDriver& d, CUdeviceptr* address, CUipcMemHandle handle) {
        return d.cuIpcOpenMemHandle(address, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
      },
      "cuIpcOpenMemHandle_v2"};
  static constexpr EntryPoint ipc_close{&CudaDriver::cuIpcCloseMemHandle, "cuIpcCloseMemHandle"};
};

std::string driver_version_text(int version) {
  return absl::StrCat("CUDA driver ", version / 1000, ".", (version % 1000) / 10);
}

// Opens device `ordinal`: its facts, and its primary context retained.
absl::StatusOr<std::unique_ptr<Device>> open_device(std::shared_ptr<const CudaDriver> driver,
                                                    int ordinal, const std::string& version) {
  const CudaDriver& d = *driver;
  CUdevice device = 0;
  MT_RETURN_IF_ERROR(d.check(d.cuDeviceGet(&device, ordinal), "cuDeviceGet",
                             absl::StrCat("ordinal ", ordinal)));
  DeviceInfo info;
  info.vendor = dsl::Vendor::kNvidia;
  info.ordinal = ordinal;
  info.driver = version;
  char name[256] = {};
  MT_RETURN_IF_ERROR(d.check(d.cuDeviceGetName(name, sizeof(name) - 1, device), "cuDeviceGetName"));
  info.name = name;
  auto attribute = [&](CUdevice_attribute which, std::string_view what) -> absl::StatusOr<int> {
    int value = 0;
    MT_RETURN_IF_ERROR(d.check(d.cuDeviceGetAttribute(&value, which, device), "cuDeviceGetAttribute",
                               absl::StrCat(to_absl(what), " of device ", ordinal)));
    return value;
  };
  MT_ASSIGN_OR_RETURN(int major, attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability major"));
  MT_ASSIGN_OR_RETURN(int minor, attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability minor"));
  MT_ASSIGN_OR_RETURN(info.compute_units, attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count"));
  MT_ASSIGN_OR_RETURN(int shared, attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "opt-in shared memory per block"));
  info.max_shared_memory_per_block = shared;
  size_t memory = 0;
  MT_RETURN_IF_ERROR(d.check(d.cuDeviceTotalMem(&memory, device), "cuDeviceTotalMem_v2"));
  info.memory_bytes = static_cast<int64_t>(memory);
  absl::StatusOr<dsl::Target> target = cuda_target(major, minor);
  if (!target.ok()) {
    return with_context(target.status(), absl::StrCat("device ", ordinal, " \"", info.name, "\""));
  }
  info.target = *std::move(target);
  CUcontext context = nullptr;
  MT_RETURN_IF_ERROR(d.check(d.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain",
                             absl::StrCat("device ", ordinal, " \"", info.name, "\"")));
  return std::unique_ptr<Device>(std::make_unique<GpuDevice<CudaApi>>(
      std::move(driver), CudaApi::Context{device, context}, std::move(info)));
}

}  // namespace

absl::StatusOr<dsl::Target> cuda_target(int major, int minor) {
  const int capability = major * 10 + minor;
  std::string text = absl::StrCat("sm_", capability, capability >= 90 ? "a" : "");
  absl::StatusOr<dsl::Target> target = dsl::Target::parse(text);
  if (!target.ok()) {
    return absl::UnimplementedError(absl::StrCat("compute capability ", major, ".", minor,
                                                 " (", text, ") is not a target monotile supports: ",
                                                 target.status().message()));
  }
  return target;
}

absl::StatusOr<BackendDevices> open_cuda_devices(const std::vector<std::string>& library_names) {
  MT_ASSIGN_OR_RETURN(std::shared_ptr<const CudaDriver> driver, load_cuda_driver(library_names));
  const CudaDriver& d = *driver;
  int version = 0;
  std::string version_text = "unknown version";
  if (d.cuDriverGetVersion(&version) == CUDA_SUCCESS) version_text = driver_version_text(version);
  const std::string present =
      absl::StrCat("NVIDIA driver ", d.library.name(), " (", version_text, ") is present");
  const CUresult init = d.cuInit(0);
  if (init != CUDA_SUCCESS) {
    return absl::Status(
        init == CUDA_ERROR_NO_DEVICE ? absl::StatusCode::kNotFound : cuda_status_code(init),
        absl::StrCat(present, " but cuInit failed: ", d.error_name(init),
                     init == CUDA_ERROR_NO_DEVICE ? " (no GPU behind it)" : ""));
  }
  int count = 0;
  const CUresult counted = d.cuDeviceGetCount(&count);
  if (counted != CUDA_SUCCESS) {
    return absl::Status(cuda_status_code(counted),
                        absl::StrCat(present, " but cuDeviceGetCount failed: ", d.error_name(counted)));
  }
  if (count == 0) {
    return absl::NotFoundError(absl::StrCat(present, " but no GPU behind it: cuDeviceGetCount returned 0"));
  }
  return open_each(count, "NVIDIA", [&](int ordinal) {
    return open_device(driver, ordinal, version_text);
  });
}

}  // namespace monotile::runtime
