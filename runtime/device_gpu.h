// GpuDevice<Api>: the Device on a GPU driver loaded at run time, written once for every vendor
// (with open_each, discovery's loop over a driver's devices).
// Each call makes the device current, calls one driver entry point and turns its result into a
// Status naming that entry point; native handles are the driver's own, stored as integers. The
// vendor's `Api` traits (in its device_<vendor>.cpp) supply the driver table, the handle types, the
// entry points and the few behaviours that really differ, so this file names no vendor API.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "runtime/device.h"
#include "runtime/discovery.h"
#include "runtime/driver_error.h"
#include "support/log.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::runtime {

// One driver entry point and the name messages give it (the exported symbol, "_v2" included).
// `call` is a member of the vendor's driver table, or, where one vendor's call takes an argument
// the other's lacks (a flag, an attribute), a function taking the table first that supplies it.
template <typename Fn>
struct EntryPoint {
  Fn call;
  std::string_view name;
};
template <typename Fn>
EntryPoint(Fn, const char*) -> EntryPoint<Fn>;

// A native handle or device address to and from the integer the RAII handles keep: handles are
// pointers, device addresses pointers or integers depending on the vendor.
template <typename T>
T from_native(uint64_t native) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<T>(native);
  } else {
    return static_cast<T>(native);
  }
}
template <typename T>
uint64_t to_native(T handle) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<uint64_t>(handle);
  } else {
    return static_cast<uint64_t>(handle);
  }
}

// `Api` provides:
//   Driver, Context (what make_current needs besides the DeviceInfo), Address (a device address
//   as the driver takes it), StreamHandle, EventHandle, ModuleHandle, FunctionHandle, GraphHandle,
//   GraphExecHandle;
//   make_current(driver, context, info) and release_context(driver, context), both Statuses;
//   kHostMappedFlags, kStreamNonBlocking, kCaptureThreadLocal: the vendor's spelling of each;
//   kSharedMemoryOptIn, and where true an EntryPoint set_max_dynamic_shared_memory;
//   kProgrammaticLaunch, and where true an EntryPoint launch_programmatic(function, config, stream,
//   args) for launches with LaunchConfig::programmatic_dependency (elsewhere they launch as any other);
//   an EntryPoint for each other driver call below (allocate ... graph_destroy), named after what
//   it does and taking the arguments the calls below pass.
template <typename Api>
class GpuDevice final : public Device {
 public:
  using Driver = typename Api::Driver;
  using Context = typename Api::Context;
  using Address = typename Api::Address;
  using StreamHandle = typename Api::StreamHandle;
  using EventHandle = typename Api::EventHandle;
  using ModuleHandle = typename Api::ModuleHandle;
  using FunctionHandle = typename Api::FunctionHandle;
  using GraphExecHandle = typename Api::GraphExecHandle;

  GpuDevice(std::shared_ptr<const Driver> driver, Context context, DeviceInfo info)
      : driver_(std::move(driver)), context_(context), info_(std::move(info)) {}

  ~GpuDevice() override {
    absl::Status status = Api::release_context(*driver_, context_);
    if (!status.ok()) log_warning(to_std(status.message()));
  }

  const DeviceInfo& info() const override { return info_; }

  absl::StatusOr<DeviceBuffer> allocate(size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    if (bytes == 0) return absl::InvalidArgumentError("allocating a buffer of 0 bytes");
    Address address{};
    MT_RETURN_IF_ERROR(call_for(describe_bytes(bytes), Api::allocate, &address, bytes));
    return make_buffer(to_native(address), bytes);
  }

  absl::StatusOr<HostMappedBuffer> allocate_host_mapped(size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    if (bytes == 0) return absl::InvalidArgumentError("allocating a host-mapped buffer of 0 bytes");
    void* host = nullptr;
    MT_RETURN_IF_ERROR(
        call_for(describe_bytes(bytes), Api::host_allocate, &host, bytes, Api::kHostMappedFlags));
    Address address{};
    absl::Status mapped = call(Api::host_device_pointer, &address, host, 0u);
    if (!mapped.ok()) {
      invoke(Api::host_free, host);
      return mapped;
    }
    std::memset(host, 0, bytes);
    return make_host_mapped(host, to_native(address), bytes);
  }

  // Peer memory through the driver's IPC handles: valid in another process on this machine (ranks
  // sharing one GPU or on peer GPUs); the driver refuses a handle opened in its own process.
  absl::StatusOr<ExportedBuffer> allocate_exportable(size_t bytes) override {
    MT_ASSIGN_OR_RETURN(DeviceBuffer buffer, allocate(bytes));
    MT_RETURN_IF_ERROR(fill_bytes(buffer.address(), 0, bytes));
    typename Api::IpcHandle handle{};
    MT_RETURN_IF_ERROR(
        call_for(describe_bytes(bytes), Api::ipc_get_handle, &handle, device(buffer.address())));
    return ExportedBuffer{std::move(buffer),
                          std::string(reinterpret_cast<const char*>(&handle), sizeof handle)};
  }
  absl::StatusOr<PeerMapping> map_peer(std::string_view handle, size_t bytes) override {
    typename Api::IpcHandle ipc{};
    if (handle.size() != sizeof ipc) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a peer buffer's handle of ", handle.size(), " bytes given to ", describe(info_),
          ": expected an IPC handle of ", sizeof ipc, " bytes from a device of the same vendor"));
    }
    std::memcpy(&ipc, handle.data(), sizeof ipc);
    MT_RETURN_IF_ERROR(make_current());
    Address address{};
    MT_RETURN_IF_ERROR(call_for(describe_bytes(bytes), Api::ipc_open, &address, ipc));
    return make_peer_mapping(to_native(address), bytes);
  }

  absl::Status copy_to_device(DevicePtr destination, const void* source, size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    MT_RETURN_IF_ERROR(call_for(describe_bytes(bytes), Api::copy_to_device, device(destination),
                                const_cast<void*>(source), bytes));
    // From pageable memory the copy may return once the data is staged, before the DMA lands; the
    // caller's next launch on a non-blocking stream would not wait for it.
    return call(Api::stream_synchronize, nullptr);
  }
  absl::Status copy_to_host(void* destination, DevicePtr source, size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    return call_for(describe_bytes(bytes), Api::copy_to_host, destination, device(source), bytes);
  }
  absl::Status copy_on_device(DevicePtr destination, DevicePtr source, size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    MT_RETURN_IF_ERROR(call_for(describe_bytes(bytes), Api::copy_on_device, device(destination),
                                device(source), bytes));
    // A device-to-device copy may return before it finishes.
    return call(Api::stream_synchronize, nullptr);
  }
  absl::Status fill_bytes(DevicePtr destination, uint8_t value, size_t bytes) override {
    MT_RETURN_IF_ERROR(make_current());
    MT_RETURN_IF_ERROR(
        call_for(describe_bytes(bytes), Api::fill_bytes, device(destination), value, bytes));
    return call(Api::stream_synchronize, nullptr);
  }

  absl::Status copy_to_device_async(DevicePtr destination, const void* source, size_t bytes,
                                    Stream& stream) override {
    MT_ASSIGN_OR_RETURN(StreamHandle queue, current_stream(stream));
    return call_for(describe_bytes(bytes), Api::copy_to_device_async, device(destination),
                    const_cast<void*>(source), bytes, queue);
  }
  absl::Status copy_to_host_async(void* destination, DevicePtr source, size_t bytes,
                                  Stream& stream) override {
    MT_ASSIGN_OR_RETURN(StreamHandle queue, current_stream(stream));
    return call_for(describe_bytes(bytes), Api::copy_to_host_async, destination, device(source),
                    bytes, queue);
  }
  absl::Status copy_on_device_async(DevicePtr destination, DevicePtr source, size_t bytes,
                                    Stream& stream) override {
    MT_ASSIGN_OR_RETURN(StreamHandle queue, current_stream(stream));
    return call_for(describe_bytes(bytes), Api::copy_on_device_async, device(destination),
                    device(source), bytes, queue);
  }
  absl::Status fill_bytes_async(DevicePtr destination, uint8_t value, size_t bytes,
                                Stream& stream) override {
    MT_ASSIGN_OR_RETURN(StreamHandle queue, current_stream(stream));
    return call_for(describe_bytes(bytes), Api::fill_bytes_async, device(destination), value,
                    bytes, queue);
  }

  absl::StatusOr<Stream> create_stream() override {
    MT_RETURN_IF_ERROR(make_current());
    StreamHandle stream = nullptr;
    MT_RETURN_IF_ERROR(call(Api::stream_create, &stream, Api::kStreamNonBlocking));
    return make_stream(to_native(stream));
  }

  absl::Status synchronize(Stream& stream) override {
    MT_ASSIGN_OR_RETURN(StreamHandle queue, current_stream(stream));
    return call(Api::stream_synchronize, queue);
  }

  absl::Status synchronize() override {
    MT_RETURN_IF_ERROR(make_current());
    return call(Api::device_synchronize);
  }

  absl::StatusOr<Event> create_event() override {
    MT_RETURN_IF_ERROR(make_current());
    EventHandle event = nullptr;
    MT_RETURN_IF_ERROR(call(Api::event_create, &event));
    return make_event(to_native(event));
  }

  absl::Status record(Event& event, Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(event, "event"));
    MT_ASSIGN_OR_RETURN(StreamHandle queue, current_stream(stream));
    return call(Api::event_record, handle_of<EventHandle>(event), queue);
  }

  absl::Status synchronize(Event& event) override {
    MT_RETURN_IF_ERROR(check_owned(event, "event"));
    MT_RETURN_IF_ERROR(make_current());
    return call(Api::event_synchronize, handle_of<EventHandle>(event));
  }

  absl::StatusOr<float> elapsed_ms(const Event& start, const Event& end) override {
    MT_RETURN_IF_ERROR(check_owned(start, "start event"));
    MT_RETURN_IF_ERROR(check_owned(end, "end event"));
    MT_RETURN_IF_ERROR(make_current());
    float milliseconds = 0;
    MT_RETURN_IF_ERROR(call(Api::event_elapsed_time, &milliseconds,
                            handle_of<EventHandle>(start),
                            handle_of<EventHandle>(end)));
    return milliseconds;
  }

  absl::StatusOr<Module> load_module(std::string_view code_object,
                                     std::string_view label) override {
    MT_RETURN_IF_ERROR(make_current());
    // PTX must be NUL-terminated; a binary code object is not harmed by the extra byte.
    const std::string image(code_object);
    ModuleHandle module = nullptr;
    MT_RETURN_IF_ERROR(call_for(absl::StrCat("module \"", to_absl(label), "\" (",
                                             code_object.size(), " bytes) on ", info_.target.str()),
                                Api::module_load, &module, image.c_str()));
    return make_module(to_native(module), label);
  }

  absl::StatusOr<Function> function(const Module& module, std::string_view name) override {
    MT_RETURN_IF_ERROR(check_owned(module, "module"));
    MT_RETURN_IF_ERROR(make_current());
    FunctionHandle function = nullptr;
    const std::string symbol(name);
    MT_RETURN_IF_ERROR(call_for(absl::StrCat("\"", symbol, "\" in module \"", module.label(), "\""),
                                Api::module_function, &function,
                                handle_of<ModuleHandle>(module), symbol.c_str()));
    return make_function(to_native(function), name);
  }

  absl::Status set_max_dynamic_shared_memory(const Function& function, int64_t bytes) override {
    MT_RETURN_IF_ERROR(check_owned(function));
    if (bytes < 0 || bytes > info_.max_shared_memory_per_block) {
      return absl::InvalidArgumentError(absl::StrCat(
          "set_max_dynamic_shared_memory for \"", function.name(), "\": ", bytes,
          " bytes is outside [0, ", info_.max_shared_memory_per_block, "] on ", describe(info_)));
    }
    if constexpr (Api::kSharedMemoryOptIn) {
      MT_RETURN_IF_ERROR(make_current());
      return call_for(absl::StrCat("\"", function.name(), "\" (max dynamic shared memory ", bytes,
                                   " bytes)"),
                      Api::set_max_dynamic_shared_memory,
                      from_native<FunctionHandle>(function.native()),
                      static_cast<int>(bytes));
    } else {
      return absl::OkStatus();
    }
  }

  absl::Status launch(const Function& function, const LaunchConfig& config, void** args,
                      Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(function));
    MT_ASSIGN_OR_RETURN(StreamHandle queue, current_stream(stream));
    if constexpr (Api::kProgrammaticLaunch) {
      if (config.programmatic_dependency) {
        const auto result =
            invoke(Api::launch_programmatic, from_native<FunctionHandle>(function.native()), config, queue, args);
        if (result == 0) return absl::OkStatus();
        return driver_->check(result, Api::launch_programmatic.name,
                              absl::StrCat("\"", function.name(), "\" (", describe(config), ")"));
      }
    }
    const auto result = invoke(Api::launch, from_native<FunctionHandle>(function.native()), config.grid.x,
                               config.grid.y, config.grid.z, config.block.x, config.block.y, config.block.z,
                               config.shared_memory_bytes, queue, args, nullptr);
    // The subject is written only for an error: a launch allocates nothing on the host.
    if (result == 0) return absl::OkStatus();  // success, for either driver
    return driver_->check(result, Api::launch.name,
                          absl::StrCat("\"", function.name(), "\" (", describe(config), ")"));
  }

  absl::Status begin_capture(Stream& stream) override {
    MT_ASSIGN_OR_RETURN(StreamHandle queue, current_stream(stream));
    // Thread-local: another thread's unsafe calls (an allocation) do not break this capture.
    return call(Api::begin_capture, queue, Api::kCaptureThreadLocal);
  }

  absl::StatusOr<Graph> end_capture(Stream& stream) override {
    MT_ASSIGN_OR_RETURN(StreamHandle queue, current_stream(stream));
    typename Api::GraphHandle graph = nullptr;
    MT_RETURN_IF_ERROR(call(Api::end_capture, queue, &graph));
    GraphExecHandle exec = nullptr;
    absl::Status instantiated = call(Api::graph_instantiate, &exec, graph, 0ull);
    // The executable graph is independent of the graph it was made from.
    invoke(Api::graph_destroy, graph);
    MT_RETURN_IF_ERROR(instantiated);
    return make_graph(to_native(exec));
  }

  absl::Status replay(const Graph& graph, Stream& stream) override {
    MT_RETURN_IF_ERROR(check_owned(graph, "graph"));
    MT_ASSIGN_OR_RETURN(StreamHandle queue, current_stream(stream));
    return call(Api::graph_launch, handle_of<GraphExecHandle>(graph), queue);
  }

 private:
  // The driver's result of `entry` called with `args`.
  template <typename Fn, typename... Args>
  auto invoke(const EntryPoint<Fn>& entry, Args&&... args) const {
    if constexpr (std::is_member_object_pointer_v<Fn>) {
      return ((*driver_).*entry.call)(std::forward<Args>(args)...);
    } else {
      return entry.call(*driver_, std::forward<Args>(args)...);
    }
  }
  // `entry` called, its failure a Status naming it (and `subject`: what it was asked to do).
  template <typename Fn, typename... Args>
  absl::Status call(const EntryPoint<Fn>& entry, Args&&... args) const {
    return driver_->check(invoke(entry, std::forward<Args>(args)...), entry.name);
  }
  template <typename Fn, typename... Args>
  absl::Status call_for(std::string_view subject, const EntryPoint<Fn>& entry,
                        Args&&... args) const {
    return driver_->check(invoke(entry, std::forward<Args>(args)...), entry.name, subject);
  }

  absl::Status make_current() const { return Api::make_current(*driver_, context_, info_); }

  absl::StatusOr<StreamHandle> current_stream(const Stream& stream) const {
    MT_RETURN_IF_ERROR(check_owned(stream, "stream"));
    MT_RETURN_IF_ERROR(make_current());
    return handle_of<StreamHandle>(stream);
  }

  static Address device(DevicePtr address) { return from_native<Address>(address); }
  template <typename Handle>
  static Handle handle_of(const DeviceResource& resource) {
    return from_native<Handle>(resource.native());
  }

  void release(ResourceKind kind, uint64_t native) noexcept override {
    absl::Status status = make_current();
    if (status.ok()) {
      switch (kind) {
        case ResourceKind::kBuffer:
          status = call(Api::free_buffer, device(native));
          break;
        case ResourceKind::kHostMapped:
          status = call(Api::host_free, from_native<void*>(native));
          break;
        case ResourceKind::kStream:
          status = call(Api::stream_destroy, from_native<StreamHandle>(native));
          break;
        case ResourceKind::kEvent:
          status = call(Api::event_destroy, from_native<EventHandle>(native));
          break;
        case ResourceKind::kModule:
          status = call(Api::module_unload, from_native<ModuleHandle>(native));
          break;
        case ResourceKind::kGraph:
          status = call(Api::graph_exec_destroy, from_native<GraphExecHandle>(native));
          break;
        case ResourceKind::kPeerMapping:
          status = call(Api::ipc_close, device(native));
          break;
      }
    }
    if (!status.ok()) {
      log_warning(absl::StrCat("releasing on ", describe(info_), ": ", status.message()));
    }
  }

  std::shared_ptr<const Driver> driver_;
  Context context_;
  DeviceInfo info_;
};

// Every device `open(ordinal)` opens for the ordinals below `count`; one that fails is listed in
// `skipped` as "<vendor> device <ordinal> left out: <why>" and the others still open.
template <typename Open>
BackendDevices open_each(int count, std::string_view vendor, Open open) {
  BackendDevices result;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    absl::StatusOr<std::unique_ptr<Device>> device = open(ordinal);
    if (device.ok()) {
      result.devices.push_back(*std::move(device));
    } else {
      result.skipped.push_back(absl::StrCat(to_absl(vendor), " device ", ordinal, " left out: ",
                                            device.status().message()));
    }
  }
  return result;
}

}  // namespace monotile::runtime
