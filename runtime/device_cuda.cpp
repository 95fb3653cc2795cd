// The CUDA device (see device_cuda.h). Native handles are the driver's own (CUstream, CUevent,
// CUmodule, CUgraphExec, CUdeviceptr) stored as integers in the RAII handles.
#include "runtime/device_cuda.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/driver_cuda.h"
#include "runtime/driver_error.h"
#include "support/log.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::runtime {
namespace {

using namespace cuda_api;  // NOLINT: the driver's names read best unqualified here

template <typename T>
T as(uint64_t native) {
  return reinterpret_cast<T>(native);
}
template <typename T>
uint64_t native_of(T handle) {
  return reinterpret_cast<uint64_t>(handle);
}

class CudaDevice final : public Device {
 public:
  CudaDevice(std::shared_ptr<const CudaDriver> driver, CUdevice device, CUcontext context,
             DeviceInfo info)
      : driver_(std::move(driver)), device_(device), context_(context), info_(std::move(info)) {}

  ~CudaDevice() override {
    absl::Status status = driver_->check(driver_->cuDevicePrimaryCtxRelease(device_),
                                         "cuDevicePrimaryCtxRelease_v2");
    if (!status.ok()) log_warning(to_std(status.message()));
  }

  const DeviceInfo& info() const override { return info_; }

  absl::StatusOr<DeviceBuffer> allocate(size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    if (bytes == 0) return absl::InvalidArgumentError("allocating a buffer of 0 bytes");
    CUdeviceptr address = 0;
    MT_RETURN_IF_ERROR(
        driver_->check(driver_->cuMemAlloc(&address, bytes), "cuMemAlloc_v2", describe_bytes(bytes)));
    return make_buffer(address, bytes);
  }

  absl::StatusOr<HostMappedBuffer> allocate_host_mapped(size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    if (bytes == 0) return absl::InvalidArgumentError("allocating a host-mapped buffer of 0 bytes");
    void* host = nullptr;
    MT_RETURN_IF_ERROR(driver_->check(
        driver_->cuMemHostAlloc(&host, bytes, kMemHostAllocPortable | kMemHostAllocDeviceMap),
        "cuMemHostAlloc", describe_bytes(bytes)));
    CUdeviceptr address = 0;
    absl::Status mapped = driver_->check(driver_->cuMemHostGetDevicePointer(&address, host, 0),
                                         "cuMemHostGetDevicePointer_v2");
    if (!mapped.ok()) {
      driver_->cuMemFreeHost(host);
      return mapped;
    }
    std::memset(host, 0, bytes);
    return make_host_mapped(host, address, bytes);
  }

  absl::Status copy_to_device(DevicePtr destination, const void* source, size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    MT_RETURN_IF_ERROR(driver_->check(driver_->cuMemcpyHtoD(destination, source, bytes),
                                      "cuMemcpyHtoD_v2", copy_subject(bytes)));
    // From pageable memory the copy may return once the data is staged, before the DMA lands; the
    // caller's next launch on a non-blocking stream would not wait for it.
    return driver_->check(driver_->cuStreamSynchronize(nullptr), "cuStreamSynchronize");
  }
  absl::Status copy_to_host(void* destination, DevicePtr source, size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    return driver_->check(driver_->cuMemcpyDtoH(destination, source, bytes), "cuMemcpyDtoH_v2",
                          copy_subject(bytes));
  }
  absl::Status copy_on_device(DevicePtr destination, DevicePtr source, size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    MT_RETURN_IF_ERROR(driver_->check(driver_->cuMemcpyDtoD(destination, source, bytes),
                                      "cuMemcpyDtoD_v2", copy_subject(bytes)));
    // A device-to-device copy may return before it finishes.
    return driver_->check(driver_->cuStreamSynchronize(nullptr), "cuStreamSynchronize");
  }
  absl::Status fill_bytes(DevicePtr destination, uint8_t value, size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    MT_RETURN_IF_ERROR(driver_->check(driver_->cuMemsetD8(destination, value, bytes),
                                      "cuMemsetD8_v2", copy_subject(bytes)));
    return driver_->check(driver_->cuStreamSynchronize(nullptr), "cuStreamSynchronize");
  }

  absl::Status copy_to_device_async(DevicePtr destination, const void* source, size_t bytes,
                                    Stream& stream) override {
    MT_ASSIGN_OR_RETURN(CUstream queue, current_stream(stream));
    return driver_->check(driver_->cuMemcpyHtoDAsync(destination, source, bytes, queue),
                          "cuMemcpyHtoDAsync_v2", copy_subject(bytes));
  }
  absl::Status copy_to_host_async(void* destination, DevicePtr source, size_t bytes,
                                  Stream& stream) override {
    MT_ASSIGN_OR_RETURN(CUstream queue, current_stream(stream));
    return driver_->check(driver_->cuMemcpyDtoHAsync(destination, source, bytes, queue),
                          "cuMemcpyDtoHAsync_v2", copy_subject(bytes));
  }
  absl::Status copy_on_device_async(DevicePtr destination, DevicePtr source, size_t bytes,
                                    Stream& stream) override {
    MT_ASSIGN_OR_RETURN(CUstream queue, current_stream(stream));
    return driver_->check(driver_->cuMemcpyDtoDAsync(destination, source, bytes, queue),
                          "cuMemcpyDtoDAsync_v2", copy_subject(bytes));
  }
  absl::Status fill_bytes_async(DevicePtr destination, uint8_t value, size_t bytes,
                                Stream& stream) override {
    MT_ASSIGN_OR_RETURN(CUstream queue, current_stream(stream));
    return driver_->check(driver_->cuMemsetD8Async(destination, value, bytes, queue),
                          "cuMemsetD8Async", copy_subject(bytes));
  }

  absl::StatusOr<Stream> create_stream() override {
    MT_RETURN_IF_ERROR(make_current());
    CUstream stream = nullptr;
    MT_RETURN_IF_ERROR(
        driver_->check(driver_->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
    return make_stream(native_of(stream));
  }

  absl::Status synchronize(Stream& stream) override {
    MT_ASSIGN_OR_RETURN(CUstream queue, current_stream(stream));
    return driver_->check(driver_->cuStreamSynchronize(queue), "cuStreamSynchronize");
  }

  absl::Status synchronize() override {
    MT_RETURN_IF_ERROR(make_current());
    return driver_->check(driver_->cuCtxSynchronize(), "cuCtxSynchronize");
  }

  absl::StatusOr<Event> create_event() override {
    MT_RETURN_IF_ERROR(make_current());
    CUevent event = nullptr;
    MT_RETURN_IF_ERROR(
        driver_->check(driver_->cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate"));
    return make_event(native_of(event));
  }

  absl::Status record(Event& event, Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(event, "event"));
    MT_ASSIGN_OR_RETURN(CUstream queue, current_stream(stream));
    return driver_->check(driver_->cuEventRecord(as<CUevent>(event.native()), queue),
                          "cuEventRecord");
  }

  absl::Status synchronize(Event& event) override {
    MT_RETURN_IF_ERROR(check_owned(event, "event"));
    MT_RETURN_IF_ERROR(make_current());
    return driver_->check(driver_->cuEventSynchronize(as<CUevent>(event.native())),
                          "cuEventSynchronize");
  }

  absl::StatusOr<float> elapsed_ms(const Event& start, const Event& end) override {
    MT_RETURN_IF_ERROR(check_owned(start, "start event"));
    MT_RETURN_IF_ERROR(check_owned(end, "end event"));
    MT_RETURN_IF_ERROR(make_current());
    float milliseconds = 0;
    MT_RETURN_IF_ERROR(driver_->check(
        driver_->cuEventElapsedTime(&milliseconds, as<CUevent>(start.native()),
                                    as<CUevent>(end.native())),
        "cuEventElapsedTime"));
    return milliseconds;
  }

  absl::StatusOr<Module> load_module(std::string_view code_object,
                                     std::string_view label) override {
    MT_RETURN_IF_ERROR(make_current());
    // PTX must be NUL-terminated; a CUBIN is not harmed by the extra byte.
    const std::string image(code_object);
    CUmodule module = nullptr;
    MT_RETURN_IF_ERROR(driver_->check(
        driver_->cuModuleLoadData(&module, image.c_str()), "cuModuleLoadData",
        absl::StrCat("module \"", to_absl(label), "\" (", code_object.size(), " bytes) on ",
                     info_.target.str())));
    return make_module(native_of(module), label);
  }

  absl::StatusOr<Function> function(const Module& module, std::string_view name) override {
    MT_RETURN_IF_ERROR(check_owned(module, "module"));
    MT_RETURN_IF_ERROR(make_current());
    CUfunction function = nullptr;
    const std::string symbol(name);
    MT_RETURN_IF_ERROR(driver_->check(
        driver_->cuModuleGetFunction(&function, as<CUmodule>(module.native()), symbol.c_str()),
        "cuModuleGetFunction",
        absl::StrCat("\"", symbol, "\" in module \"", module.label(), "\"")));
    return make_function(native_of(function), name);
  }

  absl::Status set_max_dynamic_shared_memory(const Function& function, int64_t bytes) override {
    MT_RETURN_IF_ERROR(check_owned(function));
    if (bytes < 0 || bytes > info_.max_shared_memory_per_block) {
      return absl::InvalidArgumentError(absl::StrCat(
          "set_max_dynamic_shared_memory for \"", function.name(), "\": ", bytes,
          " bytes is outside [0, ", info_.max_shared_memory_per_block, "] on ", describe(info_)));
    }
    MT_RETURN_IF_ERROR(make_current());
    return driver_->check(
        driver_->cuFuncSetAttribute(as<CUfunction>(function.native()),
                                    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(bytes)),
        "cuFuncSetAttribute",
        absl::StrCat("\"", function.name(), "\" (max dynamic shared memory ", bytes, " bytes)"));
  }

  absl::Status launch(const Function& function, const LaunchConfig& config, void** args,
                      Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(function));
    MT_ASSIGN_OR_RETURN(CUstream queue, current_stream(stream));
    return driver_->check(
        driver_->cuLaunchKernel(as<CUfunction>(function.native()), config.grid.x, config.grid.y,
                                config.grid.z, config.block.x, config.block.y, config.block.z,
                                config.shared_memory_bytes, queue, args, nullptr),
        "cuLaunchKernel", absl::StrCat("\"", function.name(), "\" (", describe(config), ")"));
  }

  absl::Status begin_capture(Stream& stream) override {
    MT_ASSIGN_OR_RETURN(CUstream queue, current_stream(stream));
    // Thread-local: another thread's unsafe calls (a cuMemAlloc) do not break this capture.
    return driver_->check(driver_->cuStreamBeginCapture(queue, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                          "cuStreamBeginCapture_v2");
  }

  absl::StatusOr<Graph> end_capture(Stream& stream) override {
    MT_ASSIGN_OR_RETURN(CUstream queue, current_stream(stream));
    CUgraph graph = nullptr;
    MT_RETURN_IF_ERROR(
        driver_->check(driver_->cuStreamEndCapture(queue, &graph), "cuStreamEndCapture"));
    CUgraphExec exec = nullptr;
    absl::Status instantiated = driver_->check(
        driver_->cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
    // The executable graph is independent of the graph it was made from.
    driver_->cuGraphDestroy(graph);
    MT_RETURN_IF_ERROR(instantiated);
    return make_graph(native_of(exec));
  }

  absl::Status replay(const Graph& graph, Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(graph, "graph"));
    MT_ASSIGN_OR_RETURN(CUstream queue, current_stream(stream));
    return driver_->check(driver_->cuGraphLaunch(as<CUgraphExec>(graph.native()), queue),
                          "cuGraphLaunch");
  }

 private:
  absl::Status make_current() const {
    return driver_->check(driver_->cuCtxSetCurrent(context_), "cuCtxSetCurrent",
                          describe(info_));
  }

  absl::StatusOr<CUstream> current_stream(const Stream& stream) const {
    MT_RETURN_IF_ERROR(check_owned(stream, "stream"));
    MT_RETURN_IF_ERROR(make_current());
    return as<CUstream>(stream.native());
  }

  static std::string copy_subject(size_t bytes) { return describe_bytes(bytes); }

  void release(ResourceKind kind, uint64_t native) noexcept override {
    absl::Status status = make_current();
    if (status.ok()) {
      switch (kind) {
        case ResourceKind::kBuffer:
          status = driver_->check(driver_->cuMemFree(native), "cuMemFree_v2");
          break;
        case ResourceKind::kHostMapped:
          status = driver_->check(driver_->cuMemFreeHost(as<void*>(native)), "cuMemFreeHost");
          break;
        case ResourceKind::kStream:
          status = driver_->check(driver_->cuStreamDestroy(as<CUstream>(native)),
                                  "cuStreamDestroy_v2");
          break;
        case ResourceKind::kEvent:
          status =
              driver_->check(driver_->cuEventDestroy(as<CUevent>(native)), "cuEventDestroy_v2");
          break;
        case ResourceKind::kModule:
          status = driver_->check(driver_->cuModuleUnload(as<CUmodule>(native)), "cuModuleUnload");
          break;
        case ResourceKind::kGraph:
          status = driver_->check(driver_->cuGraphExecDestroy(as<CUgraphExec>(native)),
                                  "cuGraphExecDestroy");
          break;
      }
    }
    if (!status.ok()) log_warning(absl::StrCat("releasing on ", describe(info_), ": ", status.message()));
  }

  std::shared_ptr<const CudaDriver> driver_;
  CUdevice device_;
  CUcontext context_;
  DeviceInfo info_;
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
  return std::unique_ptr<Device>(
      std::make_unique<CudaDevice>(std::move(driver), device, context, std::move(info)));
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
  BackendDevices result;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    absl::StatusOr<std::unique_ptr<Device>> device = open_device(driver, ordinal, version_text);
    if (device.ok()) {
      result.devices.push_back(*std::move(device));
    } else {
      result.skipped.push_back(absl::StrCat("NVIDIA device ", ordinal, " left out: ",
                                            device.status().message()));
    }
  }
  return result;
}

}  // namespace monotile::runtime
