// discover_devices: asks each backend in turn; see discovery.h.
#include "runtime/discovery.h"

#include <utility>

#include "runtime/device_cpu.h"
#include "runtime/device_cuda.h"
#include "runtime/device_hip.h"

namespace monotile::runtime {
namespace {

void add_backend(dsl::Vendor vendor, absl::StatusOr<BackendDevices> found, Discovery& discovery) {
  if (!found.ok()) {
    discovery.missing.push_back({vendor, std::string(found.status().message())});
    return;
  }
  for (std::string& reason : found->skipped) discovery.skipped.push_back(std::move(reason));
  if (found->devices.empty()) {
    discovery.missing.push_back(
        {vendor, "the driver reported devices but none is usable (see the devices left out)"});
  }
  for (std::unique_ptr<Device>& device : found->devices) {
    discovery.devices.push_back(std::move(device));
  }
}

}  // namespace

Discovery discover_devices(const DiscoveryOptions& options) {
  Discovery discovery;
  add_backend(dsl::Vendor::kNvidia, open_cuda_devices(options.cuda_libraries), discovery);
  add_backend(dsl::Vendor::kAmd, open_hip_devices(options.hip_libraries), discovery);
  if (options.include_cpu) discovery.devices.push_back(make_cpu_device(options.cpu_loader));
  return discovery;
}

}  // namespace monotile::runtime
