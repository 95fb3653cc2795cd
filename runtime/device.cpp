// The parts of Device and its handles that every backend shares: handle ownership and the checks
// that a handle belongs to the device it is given to.
#include "runtime/device.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "support/strings.h"

namespace monotile::runtime {

DeviceResource::DeviceResource(DeviceResource&& other) noexcept
    : device_(std::exchange(other.device_, nullptr)),
      kind_(other.kind_),
      native_(std::exchange(other.native_, 0)),
      owned_(std::exchange(other.owned_, true)) {}

DeviceResource& DeviceResource::operator=(DeviceResource&& other) noexcept {
  if (this != &other) {
    reset();
    device_ = std::exchange(other.device_, nullptr);
    kind_ = other.kind_;
    native_ = std::exchange(other.native_, 0);
    owned_ = std::exchange(other.owned_, true);
  }
  return *this;
}

DeviceResource::~DeviceResource() { reset(); }

void DeviceResource::reset() {
  if (device_ == nullptr) return;
  if (owned_) device_->release(kind_, native_);
  device_ = nullptr;
  native_ = 0;
  owned_ = true;
}

std::string describe(const DeviceInfo& info) {
  return absl::StrCat(dsl::vendor_name(info.vendor).data(), " device ", info.ordinal, " \"",
                      info.name, "\" (", info.target.str(), ")");
}

absl::StatusOr<Stream> Device::wrap_stream(uint64_t native) { return Stream(this, native, false); }

absl::StatusOr<Event> Device::wrap_event(uint64_t native) {
  if (native == 0) {
    return absl::InvalidArgumentError(absl::StrCat("wrap_event on ", describe(info()),
                                                   ": the native event is null; expected an event the host created"));
  }
  return Event(this, native, false);
}

absl::StatusOr<ExportedBuffer> Device::allocate_exportable(size_t bytes) {
  return absl::UnimplementedError(
      absl::StrCat(describe(info()), " cannot export ", bytes,
                   " bytes to other ranks: it shares no memory with them"));
}

absl::StatusOr<PeerMapping> Device::map_peer(std::string_view, size_t bytes) {
  return absl::UnimplementedError(absl::StrCat(describe(info()), " cannot map another rank's ",
                                               bytes, " bytes: it shares no memory with them"));
}

absl::Status Device::check_owned(const DeviceResource& resource, std::string_view what) const {
  if (!resource.valid()) {
    return absl::FailedPreconditionError(absl::StrCat(to_absl(what), " given to ",
                                                      describe(info()),
                                                      " is empty (moved from or never created)"));
  }
  if (resource.device() != this) {
    return absl::FailedPreconditionError(
        absl::StrCat(to_absl(what), " given to ", describe(info()), " belongs to ",
                     describe(resource.device()->info()),
                     "; hint: create it on the device that uses it"));
  }
  return absl::OkStatus();
}

absl::Status Device::check_owned(const Function& function) const {
  if (function.device() == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "function given to ", describe(info()), " is empty (never looked up)"));
  }
  if (function.device() != this) {
    return absl::FailedPreconditionError(absl::StrCat(
        "function \"", function.name(), "\" given to ", describe(info()), " was loaded on ",
        describe(function.device()->info()), "; hint: load the module on every device that launches it"));
  }
  return absl::OkStatus();
}

}  // namespace monotile::runtime
