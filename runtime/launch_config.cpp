// Text forms of launch dimensions, shared by every device's error messages.
#include "runtime/launch_config.h"

#include "absl/strings/str_cat.h"

namespace monotile::runtime {

std::string describe(const Dim3& dims) { return absl::StrCat(dims.x, "x", dims.y, "x", dims.z); }

std::string describe(const LaunchConfig& config) {
  return absl::StrCat("grid ", describe(config.grid), ", block ", describe(config.block), ", smem ",
                      config.shared_memory_bytes, config.programmatic_dependency ? ", programmatic" : "");
}

}  // namespace monotile::runtime
