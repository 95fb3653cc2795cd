// The HIP device (see device_hip.h). Native handles are the runtime's own (hipStream_t,
// hipEvent_t, hipModule_t, hipGraphExec_t, device pointers) stored as integers in the handles.
#include "runtime/device_hip.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/driver_error.h"
#include "support/log.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::runtime {
namespace {

using namespace hip_api;  // NOLINT: the runtime's names read best unqualified here

template <typename T>
T as(uint64_t native) {
  return reinterpret_cast<T>(native);
}
template <typename T>
uint64_t native_of(T handle) {
  return reinterpret_cast<uint64_t>(handle);
}
hipDeviceptr_t pointer(DevicePtr address) { return reinterpret_cast<hipDeviceptr_t>(address); }

class HipDevice final : public Device {
 public:
  HipDevice(std::shared_ptr<const HipDriver> driver, DeviceInfo info)
      : driver_(std::move(driver)), info_(std::move(info)) {}

  const DeviceInfo& info() const override { return info_; }

  absl::StatusOr<DeviceBuffer> allocate(size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    if (bytes == 0) return absl::InvalidArgumentError("allocating a buffer of 0 bytes");
    void* address = nullptr;
    MT_RETURN_IF_ERROR(
        driver_->check(driver_->hipMalloc(&address, bytes), "hipMalloc", describe_bytes(bytes)));
    return make_buffer(native_of(address), bytes);
  }

  absl::StatusOr<HostMappedBuffer> allocate_host_mapped(size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    if (bytes == 0) return absl::InvalidArgumentError("allocating a host-mapped buffer of 0 bytes");
    void* host = nullptr;
    MT_RETURN_IF_ERROR(driver_->check(
        driver_->hipHostMalloc(&host, bytes, kHostMallocMapped | kHostMallocPortable),
        "hipHostMalloc", describe_bytes(bytes)));
    void* address = nullptr;
    absl::Status mapped = driver_->check(driver_->hipHostGetDevicePointer(&address, host, 0),
                                         "hipHostGetDevicePointer");
    if (!mapped.ok()) {
      driver_->hipHostFree(host);
      return mapped;
    }
    std::memset(host, 0, bytes);
    return make_host_mapped(host, native_of(address), bytes);
  }

  absl::Status copy_to_device(DevicePtr destination, const void* source, size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    MT_RETURN_IF_ERROR(driver_->check(
        driver_->hipMemcpyHtoD(pointer(destination), const_cast<void*>(source), bytes),
        "hipMemcpyHtoD", describe_bytes(bytes)));
    // As on CUDA: a copy from pageable memory may return before it lands.
    return driver_->check(driver_->hipStreamSynchronize(nullptr), "hipStreamSynchronize");
  }
  absl::Status copy_to_host(void* destination, DevicePtr source, size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    return driver_->check(driver_->hipMemcpyDtoH(destination, pointer(source), bytes),
                          "hipMemcpyDtoH", describe_bytes(bytes));
  }
  absl::Status copy_on_device(DevicePtr destination, DevicePtr source, size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    MT_RETURN_IF_ERROR(driver_->check(
        driver_->hipMemcpyDtoD(pointer(destination), pointer(source), bytes), "hipMemcpyDtoD",
        describe_bytes(bytes)));
    return driver_->check(driver_->hipStreamSynchronize(nullptr), "hipStreamSynchronize");
  }
  absl::Status fill_bytes(DevicePtr destination, uint8_t value, size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    MT_RETURN_IF_ERROR(driver_->check(driver_->hipMemsetD8(pointer(destination), value, bytes),
                                      "hipMemsetD8", describe_bytes(bytes)));
    return driver_->check(driver_->hipStreamSynchronize(nullptr), "hipStreamSynchronize");
  }

  absl::Status copy_to_device_async(DevicePtr destination, const void* source, size_t bytes,
                                    Stream& stream) override {
    MT_ASSIGN_OR_RETURN(hipStream_t queue, current_stream(stream));
    return driver_->check(driver_->hipMemcpyHtoDAsync(pointer(destination),
                                                      const_cast<void*>(source), bytes, queue),
                          "hipMemcpyHtoDAsync", describe_bytes(bytes));
  }
  absl::Status copy_to_host_async(void* destination, DevicePtr source, size_t bytes,
                                  Stream& stream) override {
    MT_ASSIGN_OR_RETURN(hipStream_t queue, current_stream(stream));
    return driver_->check(driver_->hipMemcpyDtoHAsync(destination, pointer(source), bytes, queue),
                          "hipMemcpyDtoHAsync", describe_bytes(bytes));
  }
  absl::Status copy_on_device_async(DevicePtr destination, DevicePtr source, size_t bytes,
                                    Stream& stream) override {
    MT_ASSIGN_OR_RETURN(hipStream_t queue, current_stream(stream));
    return driver_->check(
        driver_->hipMemcpyDtoDAsync(pointer(destination), pointer(source), bytes, queue),
        "hipMemcpyDtoDAsync", describe_bytes(bytes));
  }
  absl::Status fill_bytes_async(DevicePtr destination, uint8_t value, size_t bytes,
                                Stream& stream) override {
    MT_ASSIGN_OR_RETURN(hipStream_t queue, current_stream(stream));
    return driver_->check(driver_->hipMemsetD8Async(pointer(destination), value, bytes, queue),
                          "hipMemsetD8Async", describe_bytes(bytes));
  }

  absl::StatusOr<Stream> create_stream() override {
    MT_RETURN_IF_ERROR(make_current());
    hipStream_t stream = nullptr;
    MT_RETURN_IF_ERROR(driver_->check(
        driver_->hipStreamCreateWithFlags(&stream, kStreamNonBlocking), "hipStreamCreateWithFlags"));
    return make_stream(native_of(stream));
  }

  absl::Status synchronize(Stream& stream) override {
    MT_ASSIGN_OR_RETURN(hipStream_t queue, current_stream(stream));
    return driver_->check(driver_->hipStreamSynchronize(queue), "hipStreamSynchronize");
  }

  absl::Status synchronize() override {
    MT_RETURN_IF_ERROR(make_current());
    return driver_->check(driver_->hipDeviceSynchronize(), "hipDeviceSynchronize");
  }

  absl::StatusOr<Event> create_event() override {
    MT_RETURN_IF_ERROR(make_current());
    hipEvent_t event = nullptr;
    MT_RETURN_IF_ERROR(driver_->check(driver_->hipEventCreate(&event), "hipEventCreate"));
    return make_event(native_of(event));
  }

  absl::Status record(Event& event, Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(event, "event"));
    MT_ASSIGN_OR_RETURN(hipStream_t queue, current_stream(stream));
    return driver_->check(driver_->hipEventRecord(as<hipEvent_t>(event.native()), queue),
                          "hipEventRecord");
  }

  absl::Status synchronize(Event& event) override {
    MT_RETURN_IF_ERROR(check_owned(event, "event"));
    MT_RETURN_IF_ERROR(make_current());
    return driver_->check(driver_->hipEventSynchronize(as<hipEvent_t>(event.native())),
                          "hipEventSynchronize");
  }

  absl::StatusOr<float> elapsed_ms(const Event& start, const Event& end) override {
    MT_RETURN_IF_ERROR(check_owned(start, "start event"));
    MT_RETURN_IF_ERROR(check_owned(end, "end event"));
    MT_RETURN_IF_ERROR(make_current());
    float milliseconds = 0;
    MT_RETURN_IF_ERROR(driver_->check(
        driver_->hipEventElapsedTime(&milliseconds, as<hipEvent_t>(start.native()),
                                     as<hipEvent_t>(end.native())),
        "hipEventElapsedTime"));
    return milliseconds;
  }

  absl::StatusOr<Module> load_module(std::string_view code_object,
                                     std::string_view label) override {
    MT_RETURN_IF_ERROR(make_current());
    const std::string image(code_object);
    hipModule_t module = nullptr;
    MT_RETURN_IF_ERROR(driver_->check(
        driver_->hipModuleLoadData(&module, image.data()), "hipModuleLoadData",
        absl::StrCat("module \"", to_absl(label), "\" (", code_object.size(), " bytes) on ",
                     info_.target.str())));
    return make_module(native_of(module), label);
  }

  absl::StatusOr<Function> function(const Module& module, std::string_view name) override {
    MT_RETURN_IF_ERROR(check_owned(module, "module"));
    MT_RETURN_IF_ERROR(make_current());
    hipFunction_t function = nullptr;
    const std::string symbol(name);
    MT_RETURN_IF_ERROR(driver_->check(
        driver_->hipModuleGetFunction(&function, as<hipModule_t>(module.native()), symbol.c_str()),
        "hipModuleGetFunction", absl::StrCat("\"", symbol, "\" in module \"", module.label(), "\"")));
    return make_function(native_of(function), name);
  }

  absl::Status set_max_dynamic_shared_memory(const Function& function, int64_t bytes) override {
    MT_RETURN_IF_ERROR(check_owned(function));
    // AMD has no opt-in: a kernel may use all of the block's LDS; only the bound is checked.
    if (bytes < 0 || bytes > info_.max_shared_memory_per_block) {
      return absl::InvalidArgumentError(absl::StrCat(
          "set_max_dynamic_shared_memory for \"", function.name(), "\": ", bytes,
          " bytes is outside [0, ", info_.max_shared_memory_per_block, "] on ", describe(info_)));
    }
    return absl::OkStatus();
  }

  absl::Status launch(const Function& function, const LaunchConfig& config, void** args,
                      Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(function));
    MT_ASSIGN_OR_RETURN(hipStream_t queue, current_stream(stream));
    return driver_->check(
        driver_->hipModuleLaunchKernel(as<hipFunction_t>(function.native()), config.grid.x,
                                       config.grid.y, config.grid.z, config.block.x,
                                       config.block.y, config.block.z,
                                       config.shared_memory_bytes, queue, args, nullptr),
        "hipModuleLaunchKernel", absl::StrCat("\"", function.name(), "\" (", describe(config), ")"));
  }

  absl::Status begin_capture(Stream& stream) override {
    MT_ASSIGN_OR_RETURN(hipStream_t queue, current_stream(stream));
    return driver_->check(driver_->hipStreamBeginCapture(queue, hipStreamCaptureModeThreadLocal),
                          "hipStreamBeginCapture");
  }

  absl::StatusOr<Graph> end_capture(Stream& stream) override {
    MT_ASSIGN_OR_RETURN(hipStream_t queue, current_stream(stream));
    hipGraph_t graph = nullptr;
    MT_RETURN_IF_ERROR(
        driver_->check(driver_->hipStreamEndCapture(queue, &graph), "hipStreamEndCapture"));
    hipGraphExec_t exec = nullptr;
    absl::Status instantiated = driver_->check(
        driver_->hipGraphInstantiateWithFlags(&exec, graph, 0), "hipGraphInstantiateWithFlags");
    driver_->hipGraphDestroy(graph);
    MT_RETURN_IF_ERROR(instantiated);
    return make_graph(native_of(exec));
  }

  absl::Status replay(const Graph& graph, Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(graph, "graph"));
    MT_ASSIGN_OR_RETURN(hipStream_t queue, current_stream(stream));
    return driver_->check(driver_->hipGraphLaunch(as<hipGraphExec_t>(graph.native()), queue),
                          "hipGraphLaunch");
  }

 private:
  absl::Status make_current() const {
    return driver_->check(driver_->hipSetDevice(info_.ordinal), "hipSetDevice", describe(info_));
  }

  absl::StatusOr<hipStream_t> current_stream(const Stream& stream) const {
    MT_RETURN_IF_ERROR(check_owned(stream, "stream"));
    MT_RETURN_IF_ERROR(make_current());
    return as<hipStream_t>(stream.native());
  }

  void release(ResourceKind kind, uint64_t native) noexcept override {
    absl::Status status = make_current();
    if (status.ok()) {
      switch (kind) {
        case ResourceKind::kBuffer:
          status = driver_->check(driver_->hipFree(as<void*>(native)), "hipFree");
          break;
        case ResourceKind::kHostMapped:
          status = driver_->check(driver_->hipHostFree(as<void*>(native)), "hipHostFree");
          break;
        case ResourceKind::kStream:
          status = driver_->check(driver_->hipStreamDestroy(as<hipStream_t>(native)),
                                  "hipStreamDestroy");
          break;
        case ResourceKind::kEvent:
          status =
              driver_->check(driver_->hipEventDestroy(as<hipEvent_t>(native)), "hipEventDestroy");
          break;
        case ResourceKind::kModule:
          status = driver_->check(driver_->hipModuleUnload(as<hipModule_t>(native)),
                                  "hipModuleUnload");
          break;
        case ResourceKind::kGraph:
          status = driver_->check(driver_->hipGraphExecDestroy(as<hipGraphExec_t>(native)),
                                  "hipGraphExecDestroy");
          break;
      }
    }
    if (!status.ok()) log_warning(absl::StrCat("releasing on ", describe(info_), ": ", status.message()));
  }

  std::shared_ptr<const HipDriver> driver_;
  DeviceInfo info_;
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
  return std::unique_ptr<Device>(std::make_unique<HipDevice>(std::move(driver), std::move(info)));
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
  BackendDevices result;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    absl::StatusOr<std::unique_ptr<Device>> device = open_device(driver, ordinal, version_text);
    if (device.ok()) {
      result.devices.push_back(*std::move(device));
    } else {
      result.skipped.push_back(
          absl::StrCat("AMD device ", ordinal, " left out: ", device.status().message()));
    }
  }
  return result;
}

}  // namespace monotile::runtime
