// A device for measuring the executor's host path (tests and benchmarks, not the library): it wraps
// another device and forwards everything to it, except that a launch is counted and not run. So
// what a step costs on the host, and what it allocates, is the executor's own work.
#pragma once

#include <memory>
#include <utility>

#include "runtime/device.h"

namespace monotile::runtime::decode {

class LaunchCountingDevice : public Device {
 public:
  explicit LaunchCountingDevice(std::unique_ptr<Device> inner) : inner_(std::move(inner)) {}

  int launches() const { return launches_; }

  const DeviceInfo& info() const override { return inner_->info(); }
  absl::StatusOr<DeviceBuffer> allocate(size_t bytes) override { return inner_->allocate(bytes); }
  absl::StatusOr<ExportedBuffer> allocate_exportable(size_t bytes) override {
    return inner_->allocate_exportable(bytes);
  }
  absl::StatusOr<PeerMapping> map_peer(std::string_view handle, size_t bytes) override {
    return inner_->map_peer(handle, bytes);
  }
  absl::StatusOr<HostMappedBuffer> allocate_host_mapped(size_t bytes) override {
    return inner_->allocate_host_mapped(bytes);
  }
  absl::Status copy_to_device(DevicePtr to, const void* from, size_t bytes) override {
    return inner_->copy_to_device(to, from, bytes);
  }
  absl::Status copy_to_host(void* to, DevicePtr from, size_t bytes) override {
    return inner_->copy_to_host(to, from, bytes);
  }
  absl::Status copy_on_device(DevicePtr to, DevicePtr from, size_t bytes) override {
    return inner_->copy_on_device(to, from, bytes);
  }
  absl::Status fill_bytes(DevicePtr to, uint8_t value, size_t bytes) override {
    return inner_->fill_bytes(to, value, bytes);
  }
  absl::Status copy_to_device_async(DevicePtr to, const void* from, size_t bytes,
                                    Stream& stream) override {
    return inner_->copy_to_device_async(to, from, bytes, stream);
  }
  absl::Status copy_to_host_async(void* to, DevicePtr from, size_t bytes, Stream& stream) override {
    return inner_->copy_to_host_async(to, from, bytes, stream);
  }
  absl::Status copy_on_device_async(DevicePtr to, DevicePtr from, size_t bytes,
                                    Stream& stream) override {
    return inner_->copy_on_device_async(to, from, bytes, stream);
  }
  absl::Status fill_bytes_async(DevicePtr to, uint8_t value, size_t bytes,
                                Stream& stream) override {
    return inner_->fill_bytes_async(to, value, bytes, stream);
  }
  absl::StatusOr<Stream> create_stream() override { return inner_->create_stream(); }
  absl::StatusOr<Stream> wrap_stream(uint64_t native) override {
    return inner_->wrap_stream(native);
  }
  absl::StatusOr<Event> wrap_event(uint64_t native) override { return inner_->wrap_event(native); }
  absl::Status synchronize(Stream& stream) override { return inner_->synchronize(stream); }
  absl::Status synchronize() override { return inner_->synchronize(); }
  absl::StatusOr<Event> create_event() override { return inner_->create_event(); }
  absl::Status record(Event& event, Stream& stream) override {
    return inner_->record(event, stream);
  }
  absl::Status synchronize(Event& event) override { return inner_->synchronize(event); }
  absl::StatusOr<float> elapsed_ms(const Event& start, const Event& end) override {
    return inner_->elapsed_ms(start, end);
  }
  absl::StatusOr<Module> load_module(std::string_view code_object,
                                     std::string_view label) override {
    return inner_->load_module(code_object, label);
  }
  absl::StatusOr<Function> function(const Module& module, std::string_view name) override {
    return inner_->function(module, name);
  }
  absl::Status set_max_dynamic_shared_memory(const Function& function, int64_t bytes) override {
    return inner_->set_max_dynamic_shared_memory(function, bytes);
  }
  absl::Status launch(const Function&, const LaunchConfig&, void**, Stream&) override {
    ++launches_;
    return absl::OkStatus();
  }
  absl::Status begin_capture(Stream& stream) override { return inner_->begin_capture(stream); }
  absl::StatusOr<Graph> end_capture(Stream& stream) override { return inner_->end_capture(stream); }
  absl::Status replay(const Graph& graph, Stream& stream) override {
    return inner_->replay(graph, stream);
  }

 private:
  // Every resource is the inner device's, so none comes back here.
  void release(ResourceKind, uint64_t) noexcept override {}

  std::unique_ptr<Device> inner_;
  int launches_ = 0;
};

}  // namespace monotile::runtime::decode
