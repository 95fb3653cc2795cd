// The host's tensors made reachable by the CPU interpreter's device while the executor may touch
// them (runtime::register_host_memory): the interpreter checks every access against the memory it
// knows, and a numpy array or torch CPU tensor is memory it did not allocate. Nothing is registered
// for a GPU, whose driver reaches device memory directly, or for the launch-counting device, which
// runs no kernel.
#pragma once

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "python/src/device_handle.h"
#include "runtime/decode/tensor_view.h"

namespace monotile::python {

class HostRegistration {
 public:
  HostRegistration() = default;
  HostRegistration(HostRegistration&& other) noexcept { *this = std::move(other); }
  HostRegistration& operator=(HostRegistration&& other) noexcept;
  HostRegistration(const HostRegistration&) = delete;
  HostRegistration& operator=(const HostRegistration&) = delete;
  ~HostRegistration();

  // Registers the bytes `view` spans (its strides included) under `name`; ValueError for a range
  // the device refuses (one overlapping its own allocations).
  // `name` is called only when the view is registered.
  static HostRegistration make(const DeviceHandle& device, const runtime::decode::TensorView& view,
                               absl::FunctionRef<std::string()> name);
  static HostRegistration make(const DeviceHandle& device, const runtime::decode::TensorView& view,
                               std::string name) {
    return make(device, view, [&] { return std::move(name); });
  }

 private:
  runtime::Device* device_ = nullptr;
  const void* base_ = nullptr;
};

// Whether tensors must be registered with `device` before its kernels run on them.
bool needs_registration(const DeviceHandle& device);

}  // namespace monotile::python
