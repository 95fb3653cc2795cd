// The kernel registry: every named build the project ships, per target. `monotile warmup` compiles
// it for a list of targets. Today: the sample kernels; later the K3 layer kernels, whose builds
// depend on a model config, TP size and widths (RegistryOptions grows with them).
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dsl/target.h"
#include "jit/build.h"

namespace monotile::kernels {

struct RegistryEntry {
  std::string_view name;
  std::string_view description;
  jit::Build (*make)(const dsl::Target& target);
};

// Every entry, in a stable order.
std::span<const RegistryEntry> registry();

// The builds of every entry for `target`; an error for a target with no compiled kernels (cpu).
absl::StatusOr<std::vector<jit::Build>> registry_builds(const dsl::Target& target);

}  // namespace monotile::kernels
