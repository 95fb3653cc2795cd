// HostRegistration: register on make, unregister when dropped.
#include "python/src/host_registration.h"

#include "model/dtype.h"
#include "python/src/status_errors.h"
#include "runtime/device_cpu.h"
#include "support/log.h"

namespace monotile::python {

bool needs_registration(const DeviceHandle& device) {
  return device.tensors.type == 1 && device.counting == nullptr;
}

HostRegistration& HostRegistration::operator=(HostRegistration&& other) noexcept {
  std::swap(device_, other.device_);
  std::swap(base_, other.base_);
  return *this;
}

HostRegistration::~HostRegistration() {
  if (device_ == nullptr) return;
  if (absl::Status status = runtime::unregister_host_memory(*device_, base_); !status.ok()) {
    log_warning(std::string(status.message()));
  }
}

HostRegistration HostRegistration::make(const DeviceHandle& device,
                                        const runtime::decode::TensorView& view,
                                        absl::FunctionRef<std::string()> name) {
  HostRegistration out;
  if (!needs_registration(device) || view.data == 0) return out;
  // The span: the first element to the farthest one the strides reach, inclusive.
  int64_t last = 0;
  for (size_t d = 0; d < view.shape.size(); ++d) {
    // Nothing to reach, or strides the library refuses before any kernel runs.
    if (view.shape[d] == 0 || view.strides[d] < 0) return out;
    last += (view.shape[d] - 1) * view.strides[d];
  }
  const size_t bytes =
      static_cast<size_t>(last + 1) * static_cast<size_t>(model::dtype_size(view.dtype));
  const void* base = reinterpret_cast<const void*>(view.data);
  check(runtime::register_host_memory(*device.device, base, bytes, name()));
  out.device_ = device.device.get();
  out.base_ = base;
  return out;
}

}  // namespace monotile::python
