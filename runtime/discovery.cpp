// discover_devices: asks each backend in turn; see discovery.h.
#include "runtime/discovery.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

std::unique_ptr<Device> take_first_gpu(Discovery& found) {
  for (std::unique_ptr<Device>& device : found.devices) {
    if (device->info().vendor != dsl::Vendor::kCpu) return std::move(device);
  }
  return nullptr;
}

std::string no_gpu_reason(const Discovery& found) {
  std::vector<std::string> reasons;
  for (const MissingBackend& missing : found.missing) reasons.push_back(missing.reason);
  for (const std::string& skipped : found.skipped) reasons.push_back(skipped);
  return absl::StrCat("no GPU: ", absl::StrJoin(reasons, "; "));
}

}  // namespace monotile::runtime
