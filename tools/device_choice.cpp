// The device a command runs on; see device_choice.h.
#include "tools/device_choice.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/discovery.h"

namespace monotile::tools {

absl::StatusOr<std::unique_ptr<runtime::Device>> pick_device(const std::optional<std::string>& wanted) {
  if (wanted && *wanted != "cpu" && *wanted != "gpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("--device ", *wanted, ": expected cpu or gpu; hint: leave it out to use a GPU when there is one"));
  }
  runtime::Discovery found = runtime::discover_devices();
  std::unique_ptr<runtime::Device> cpu, gpu;
  for (std::unique_ptr<runtime::Device>& device : found.devices) {
    if (device->info().vendor == dsl::Vendor::kCpu) {
      if (!cpu) cpu = std::move(device);
    } else if (!gpu) {
      gpu = std::move(device);
    }
  }
  if (wanted == "cpu" || (!wanted && !gpu)) return cpu;
  if (gpu) return gpu;
  std::vector<std::string> reasons;
  for (const runtime::MissingBackend& missing : found.missing) reasons.push_back(missing.reason);
  for (const std::string& skipped : found.skipped) reasons.push_back(skipped);
  return absl::NotFoundError(absl::StrCat("--device gpu: no GPU device found (", absl::StrJoin(reasons, "; "),
                                          "); hint: --device cpu runs the kernels on the CPU interpreter"));
}

}  // namespace monotile::tools
