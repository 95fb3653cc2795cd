// The registry's table.
#include "kernels/registry.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kernels/samples/samples.h"

namespace monotile::kernels {
namespace {

constexpr RegistryEntry kEntries[] = {
    {"vector_add", "elementwise float add", samples::vector_add},
    {"block_reduce", "block sum: warp shuffles and shared memory", samples::block_reduce},
    {"histogram", "256-bin byte histogram: shared and global atomics", samples::histogram},
    {"bf16_axpby", "bf16 axpby, round to nearest even", samples::bf16_axpby},
    {"matrix_tile", "bf16 matrix tile on the matrix unit (mma.sync / MFMA)", samples::matrix_tile},
};

}  // namespace

std::span<const RegistryEntry> registry() { return kEntries; }

absl::StatusOr<std::vector<jit::Build>> registry_builds(const dsl::Target& target) {
  if (target.vendor() == dsl::Vendor::kCpu) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target \"", target.str(), "\" has no compiled kernels: it runs on the interpreter; hint: "
        "warm up GPU targets such as sm_90a or gfx90a"));
  }
  std::vector<jit::Build> builds;
  for (const RegistryEntry& entry : kEntries) builds.push_back(entry.make(target));
  return builds;
}

}  // namespace monotile::kernels
