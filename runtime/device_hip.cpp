// The HIP device (see device_hip.h): GpuDevice (device_gpu.h) on the HIP runtime's table, and
// discovery, which reads each device's facts from hipDeviceProp_t in the HIP 5 or 6 layout.
#include "runtime/device_hip.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/device_gpu.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::runtime {
namespace {

using namespace hip_api;  // NOLINT: the runtime's names read best unqualified here

// The HIP runtime for GpuDevice; device addresses are pointers (hipDeviceptr_t).
struct HipApi {
  using Driver = HipDriver;
  // HIP selects a device per thread (hipSetDevice, by ordinal) rather than through a retained
  // context, so there is nothing to hold or give back.
  struct Context {};
  using Address = hipDeviceptr_t;
  using StreamHandle = hipStream_t;
  using EventHandle = hipEvent_t;
  using ModuleHandle = hipModule_t;
  using FunctionHandle = hipFunction_t;
  using GraphHandle = hipGraph_t;
  using GraphExecHandle = hipGraphExec_t;

  static absl::Status make_current(const HipDriver& d, const Context&, const DeviceInfo& info) {
    // Every launch sets its device: the device's description is written only for an error.
    const hipError_t error = d.hipSetDevice(info.ordinal);
    if (error == hipSuccess) return absl::OkStatus();
    return d.check(error, "hipSetDevice", describe(info));
  }
  static absl::Status release_context(const HipDriver&, const Context&) {
    return absl::OkStatus();
  }

  // Pinned memory mapped into the device's address space and usable from every device; the vendors
  // name (and number) these flags each their own way, as they do the stream and capture flags.
  static constexpr unsigned kHostMappedFlags = kHostMallocMapped | kHostMallocPortable;
  static constexpr unsigned kStreamNonBlocking = hip_api::kStreamNonBlocking;
  static constexpr hipStreamCaptureMode kCaptureThreadLocal = hipStreamCaptureModeThreadLocal;
  // AMD has no opt-in: a kernel may use all of the block's LDS; only the bound is checked.
  static constexpr bool kSharedMemoryOptIn = false;
  // HIP has no programmatic dependent launch: every kernel launches after its predecessor ends (the
  // lowering writes no grid dependency instruction for AMD).
  static constexpr bool kProgrammaticLaunch = false;

  static constexpr EntryPoint allocate{&HipDriver::hipMalloc, "hipMalloc"};
  static constexpr EntryPoint free_buffer{&HipDriver::hipFree, "hipFree"};
  static constexpr EntryPoint host_allocate{&HipDriver::hipHostMalloc, "hipHostMalloc"};
  static constexpr EntryPoint host_device_pointer{&HipDriver::hipHostGetDevicePointer,
                                                  "hipHostGetDevicePointer"};
  static constexpr EntryPoint host_free{&HipDriver::hipHostFree, "hipHostFree"};
  static constexpr EntryPoint copy_to_device{&HipDriver::hipMemcpyHtoD, "hipMemcpyHtoD"};
  static constexpr EntryPoint copy_to_host{&HipDriver::hipMemcpyDtoH, "hipMemcpyDtoH"};
  static constexpr EntryPoint copy_on_device{&HipDriver::hipMemcpyDtoD, "hipMemcpyDtoD"};
  static constexpr EntryPoint fill_bytes{&HipDriver::hipMemsetD8, "hipMemsetD8"};
  static constexpr EntryPoint copy_to_device_async{&HipDriver::hipMemcpyHtoDAsync,
                                                   "hipMemcpyHtoDAsync"};
  static constexpr EntryPoint copy_to_host_async{&HipDriver::hipMemcpyDtoHAsync,
                                                 "hipMemcpyDtoHAsync"};
  static constexpr EntryPoint copy_on_device_async{&HipDriver::hipMemcpyDtoDAsync,
                                                   "hipMemcpyDtoDAsync"};
  static constexpr EntryPoint fill_bytes_async{&HipDriver::hipMemsetD8Async, "hipMemsetD8Async"};
  static constexpr EntryPoint stream_create{&HipDriver::hipStreamCreateWithFlags,
                                            "hipStreamCreateWithFlags"};
  static constexpr EntryPoint stream_destroy{&HipDriver::hipStreamDestroy, "hipStreamDestroy"};
  static constexpr EntryPoint stream_synchronize{&HipDriver::hipStreamSynchronize,
                                                 "hipStreamSynchronize"};
  static constexpr EntryPoint device_synchronize{&HipDriver::hipDeviceSynchronize,
                                                 "hipDeviceSynchronize"};
  static constexpr EntryPoint event_create{&HipDriver::hipEventCreate, "hipEventCreate"};
  static constexpr EntryPoint event_destroy{&HipDriver::hipEventDestroy, "hipEventDestroy"};
  static constexpr EntryPoint event_record{&HipDriver::hipEventRecord, "hipEventRecord"};
  static constexpr EntryPoint event_synchronize{&HipDriver::hipEventSynchronize,
                                                "hipEventSynchronize"};
  static constexpr EntryPoint event_elapsed_time{&HipDriver::hipEventElapsedTime,
                                                 "hipEventElapsedTime"};
  static constexpr EntryPoint module_load{&HipDriver::hipModuleLoadData, "hipModuleLoadData"};
  static constexpr EntryPoint module_unload{&HipDriver::hipModuleUnload, "hipModuleUnload"};
  static constexpr EntryPoint module_function{&HipDriver::hipModuleGetFunction,
                                              "hipModuleGetFunction"};
  static constexpr EntryPoint launch{&HipDriver::hipModuleLaunchKernel, "hipModuleLaunchKernel"};
  static constexpr EntryPoint begin_capture{&HipDriver::hipStreamBeginCapture,
                                            "hipStreamBeginCapture"};
  static constexpr EntryPoint end_capture{&HipDriver::hipStreamEndCapture, "hipStreamEndCapture"};
  static constexpr EntryPoint graph_instantiate{&HipDriver::hipGraphInstantiateWithFlags,
                                                "hipGraphInstantiateWithFlags"};
  static constexpr EntryPoint graph_launch{&HipDriver::hipGraphLaunch, "hipGraphLaunch"};
  static constexpr EntryPoint graph_exec_destroy{&HipDriver::hipGraphExecDestroy,
                                                 "hipGraphExecDestroy"};
  static constexpr EntryPoint graph_destroy{&HipDriver::hipGraphDestroy, "hipGraphDestroy"};
  // Peer memory: a buffer's IPC handle, opened in another process (peer access enabled lazily).
  using IpcHandle = hipIpcMemHandle_t;
  static constexpr EntryPoint ipc_get_handle{&HipDriver::hipIpcGetMemHandle, "hipIpcGetMemHandle"};
  // The lazy peer-access flag as this runtime's header spells it (HIP 6 is the R0600 layout).
  static constexpr EntryPoint ipc_open{
      +[](const HipDriver& d, void** address, hipIpcMemHandle_t handle) {
        return d.hipIpcOpenMemHandle(address, handle,
                                     d.device_prop_layout.size == kDevicePropR0600.size
                                         ? kIpcMemLazyEnablePeerAccessHip6
                                         : kIpcMemLazyEnablePeerAccessHip5);
      },
      "hipIpcOpenMemHandle"};
  static constexpr EntryPoint ipc_close{&HipDriver::hipIpcCloseMemHandle, "hipIpcCloseMemHandle"};
};

template <typename T>
T read_field(const unsigned char* properties, size_t offset) {
  T value;
  std::memcpy(&value, properties + offset, sizeof(T));
  return value;
}

absl::StatusOr<std::unique_ptr<Device>> open_device(std::shared_ptr<const HipDriver> driver,
                                                    int ordinal, const std::string& version) {
  const HipDriver& d = *driver;
  DeviceInfo info;
  info.vendor = dsl::Vendor::kAmd;
  info.ordinal = ordinal;
  info.driver = version;
  MT_RETURN_IF_ERROR(d.check(d.hipSetDevice(ordinal), "hipSetDevice", absl::StrCat("ordinal ", ordinal)));
  char name[256] = {};
  MT_RETURN_IF_ERROR(d.check(d.hipDeviceGetName(name, sizeof(name) - 1, ordinal), "hipDeviceGetName"));
  info.name = name;
  size_t memory = 0;
  MT_RETURN_IF_ERROR(d.check(d.hipDeviceTotalMem(&memory, ordinal), "hipDeviceTotalMem"));
  info.memory_bytes = static_cast<int64_t>(memory);
  std::vector<unsigned char> properties(kDevicePropBufferBytes, 0);
  MT_RETURN_IF_ERROR(d.check(d.hipGetDeviceProperties(properties.data(), ordinal),
                             d.device_prop_symbol, absl::StrCat("device ", ordinal)));
  const DevicePropLayout& layout = d.device_prop_layout;
  info.compute_units = read_field<int>(properties.data(), layout.multi_processor_count);
  info.max_shared_memory_per_block =
      static_cast<int64_t>(read_field<size_t>(properties.data(), layout.shared_mem_per_block));
  MT_ASSIGN_OR_RETURN(std::string arch, gcn_arch_name(properties.data(), layout));
  absl::StatusOr<dsl::Target> target = dsl::Target::parse(arch);
  if (!target.ok()) {
    return absl::UnimplementedError(absl::StrCat("device ", ordinal, " \"", info.name, "\" (", arch,
                                                 ") is not a target monotile supports: ",
                                                 target.status().message()));
  }
  info.target = *std::move(target);
  return std::unique_ptr<Device>(
      std::make_unique<GpuDevice<HipApi>>(std::move(driver), HipApi::Context{}, std::move(info)));
}

}  // namespace

absl::StatusOr<std::string> gcn_arch_name(const unsigned char* properties,
                                          const DevicePropLayout& layout) {
  const char* text = reinterpret_cast<const char*>(properties + layout.gcn_arch_name);
  const size_t length = strnlen(text, 256);
  std::string arch(text, length);
  if (length == 256 || arch.rfind("gfx", 0) != 0) {
    return absl::InternalError(absl::StrCat(
        "hipDeviceProp_t's gcnArchName at offset ", layout.gcn_arch_name, " reads \"",
        arch.substr(0, 32), "\", not an AMD architecture (\"gfx...\"): this HIP runtime's struct "
        "layout is not one monotile knows"));
  }
  return arch;
}

absl::StatusOr<BackendDevices> open_hip_devices(const std::vector<std::string>& library_names) {
  MT_ASSIGN_OR_RETURN(std::shared_ptr<const HipDriver> driver, load_hip_driver(library_names));
  const HipDriver& d = *driver;
  int version = 0;
  std::string version_text = "unknown version";
  if (d.hipRuntimeGetVersion(&version) == hipSuccess) {
    // HIP_VERSION = major * 10000000 + minor * 100000 + patch
    version_text = absl::StrCat("HIP ", version / 10000000, ".", (version / 100000) % 100, ".",
                                version % 100000);
  }
  const std::string present =
      absl::StrCat("AMD HIP runtime ", d.library.name(), " (", version_text, ") is present");
  const hipError_t init = d.hipInit(0);
  if (init != hipSuccess) {
    return absl::NotFoundError(absl::StrCat(present, " but hipInit failed: ", d.error_name(init),
                                            " (no AMD GPU, or no access to /dev/kfd)"));
  }
  int count = 0;
  const hipError_t counted = d.hipGetDeviceCount(&count);
  if (counted != hipSuccess) {
    return absl::NotFoundError(
        absl::StrCat(present, " but hipGetDeviceCount failed: ", d.error_name(counted)));
  }
  if (count == 0) {
    return absl::NotFoundError(
        absl::StrCat(present, " but no GPU behind it: hipGetDeviceCount returned 0"));
  }
  return open_each(count, "AMD", [&](int ordinal) {
    return open_device(driver, ordinal, version_text);
  });
}

}  // namespace monotile::runtime
