// Device: one GPU (CUDA or HIP, reached through its driver loaded at run time) or the CPU
// interpreter, behind one interface. Every driver failure is a Status naming the call, its main
// arguments and the driver's error name. Launches never synchronize, so a stream between
// begin_capture and end_capture records them into a graph that replay() runs again later.
// Implementations live in anonymous namespaces behind the factories in device_*.h. A Device may be
// called from several threads; a Stream is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/device_info.h"
#include "runtime/device_resources.h"
#include "runtime/launch_config.h"

namespace monotile::runtime {

class Device {
 public:
  virtual ~Device() = default;
  Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  virtual const DeviceInfo& info() const = 0;

  // Device memory, uninitialized.
  virtual absl::StatusOr<DeviceBuffer> allocate(size_t bytes) = 0;
  // Pinned host memory the device reads and writes directly (zero-filled).
  virtual absl::StatusOr<HostMappedBuffer> allocate_host_mapped(size_t bytes) = 0;

  // Synchronous copies and fills: they return when done. They are not ordered with work queued on
  // streams (streams do not synchronize with the default stream): synchronize the stream first.
  virtual absl::Status copy_to_device(DevicePtr destination, const void* source, size_t bytes) = 0;
  virtual absl::Status copy_to_host(void* destination, DevicePtr source, size_t bytes) = 0;
  virtual absl::Status copy_on_device(DevicePtr destination, DevicePtr source, size_t bytes) = 0;
  virtual absl::Status fill_bytes(DevicePtr destination, uint8_t value, size_t bytes) = 0;

  // Asynchronous, ordered on `stream`. The host memory must stay valid until the stream reaches
  // the copy (pinned memory makes it truly asynchronous on a GPU).
  virtual absl::Status copy_to_device_async(DevicePtr destination, const void* source,
                                            size_t bytes, Stream& stream) = 0;
  virtual absl::Status copy_to_host_async(void* destination, DevicePtr source, size_t bytes,
                                          Stream& stream) = 0;
  virtual absl::Status copy_on_device_async(DevicePtr destination, DevicePtr source, size_t bytes,
                                            Stream& stream) = 0;
  virtual absl::Status fill_bytes_async(DevicePtr destination, uint8_t value, size_t bytes,
                                        Stream& stream) = 0;

  // A stream that does not synchronize with the legacy default stream.
  virtual absl::StatusOr<Stream> create_stream() = 0;
  // A Stream over a native stream the host owns, so that this device's launches and copies are
  // ordered with the host's own work (vLLM: torch's current stream) and captured by the host's
  // graph capture. `native` is the stream as an integer: the CUDA or HIP driver's stream handle on
  // a GPU (0, the legacy default stream, included), the native() of a Stream this device made on
  // the CPU device. Not owned: destroying the Stream leaves the native stream alone, and the host
  // keeps it alive (and in this device's context) while the Stream is used. The CPU device refuses
  // a handle it did not make; a GPU cannot check one (a stream of another context fails at its
  // first use).
  virtual absl::StatusOr<Stream> wrap_stream(uint64_t native);
  virtual absl::Status synchronize(Stream& stream) = 0;
  // Waits for all work on the device.
  virtual absl::Status synchronize() = 0;

  // Events with timing.
  virtual absl::StatusOr<Event> create_event() = 0;
  // An Event over a native event the host owns (the driver's event handle; on the CPU device the
  // native() of an Event it made), not owned, as wrap_stream. A null handle is refused.
  virtual absl::StatusOr<Event> wrap_event(uint64_t native);
  virtual absl::Status record(Event& event, Stream& stream) = 0;
  virtual absl::Status synchronize(Event& event) = 0;
  // Milliseconds from `start` to `end`, both recorded and reached.
  virtual absl::StatusOr<float> elapsed_ms(const Event& start, const Event& end) = 0;

  // Loads a code object (a CUBIN, an HSA code object, or what the CPU device's loader accepts).
  // `label` names it in messages (the kernel or build name).
  virtual absl::StatusOr<Module> load_module(std::string_view code_object,
                                             std::string_view label) = 0;
  virtual absl::StatusOr<Function> function(const Module& module, std::string_view name) = 0;
  // Lets `function` use up to `bytes` of dynamic shared memory per block. NVIDIA needs this above
  // 48 KiB; everywhere, more than info().max_shared_memory_per_block is an error.
  virtual absl::Status set_max_dynamic_shared_memory(const Function& function, int64_t bytes) = 0;
  // Enqueues `function` on `stream` without waiting. `args` points at one pointer per kernel
  // parameter, each pointing at that parameter's value (the driver's kernelParams convention).
  virtual absl::Status launch(const Function& function, const LaunchConfig& config, void** args,
                              Stream& stream) = 0;

  // Peer memory for the ranks of a TP group (runtime/decode/peer_buffer.h). allocate_exportable:
  // `bytes` of device memory, zero-filled, with a handle another rank's device of the same kind
  // maps through map_peer (a GPU: a driver IPC handle, another process on this machine; the CPU
  // device: ranks are threads of one process, the handle the host address). A device that cannot
  // share memory returns Unimplemented; a handle this device cannot map, InvalidArgument or the
  // driver's error.
  virtual absl::StatusOr<ExportedBuffer> allocate_exportable(size_t bytes);
  virtual absl::StatusOr<PeerMapping> map_peer(std::string_view handle, size_t bytes);

  // Graph capture: work enqueued on `stream` between the two calls is recorded, not run.
  virtual absl::Status begin_capture(Stream& stream) = 0;
  virtual absl::StatusOr<Graph> end_capture(Stream& stream) = 0;
  // Enqueues one run of the captured work on `stream`.
  virtual absl::Status replay(const Graph& graph, Stream& stream) = 0;

 protected:
  // For implementations: wrap a native handle into the RAII type that gives it back to release().
  DeviceBuffer make_buffer(DevicePtr address, size_t bytes) {
    return DeviceBuffer(this, address, bytes);
  }
  HostMappedBuffer make_host_mapped(void* host, DevicePtr address, size_t bytes) {
    return HostMappedBuffer(this, host, address, bytes);
  }
  Stream make_stream(uint64_t native) { return Stream(this, native, true); }
  Event make_event(uint64_t native) { return Event(this, native, true); }
  Module make_module(uint64_t native, std::string_view label) {
    return Module(this, native, std::string(label));
  }
  Graph make_graph(uint64_t native) { return Graph(this, native); }
  PeerMapping make_peer_mapping(DevicePtr address, size_t bytes) {
    return PeerMapping(this, address, bytes);
  }
  Function make_function(uint64_t native, std::string_view name) {
    return Function(this, native, std::string(name));
  }

  // FailedPrecondition unless `resource` is live and was made by this device; `what` names the
  // argument ("stream", "event") in the message.
  absl::Status check_owned(const DeviceResource& resource, std::string_view what) const;
  absl::Status check_owned(const Function& function) const;

 private:
  friend class DeviceResource;
  // Frees one native handle of the given kind. Errors are logged, never thrown.
  virtual void release(ResourceKind kind, uint64_t native) noexcept = 0;
};

}  // namespace monotile::runtime
