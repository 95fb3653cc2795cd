// The kernel registry: every DSL kernel the project ships, by name, once. `monotile compile`,
// `warmup`, `export` and `first-call` all read it. Entries are the benchmark kernels
// (kernels/bench, with the grid and workspaces the side-by-side harness launches them with) and the
// K3 layer kernels at a default shape (K1 at the K3 TP 8 rank's shapes). A program is built when
// asked for, per target: a kernel whose code depends on the target (K1's warps and GEMV step) says
// so itself.
#pragma once

#include <array>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "dsl/ir.h"
#include "dsl/target.h"
#include "jit/program_build.h"
#include "kernels/bench/bench_kernels.h"

namespace monotile::kernels {

enum class KernelFamily { kBench, kLayer };

struct RegistryEntry {
  std::string name;  // what every command calls it, and the name of its builds (a benchmark
                     // kernel's is its program's name)
  KernelFamily family = KernelFamily::kBench;
  std::string description;
  std::function<dsl::Program(const dsl::Target&)> program;
  // What make_build gets for a target (resource policy: K1 on AMD may spill, docs/perf.md).
  std::function<jit::ProgramBuildOptions(const dsl::Target&)> options;
  // Benchmark kernels: the launch grid and the workspaces (monotile export's JSON, first-call).
  std::array<int, 3> grid{};
  std::vector<bench::BenchWorkspace> workspaces{};
};

// Every entry, in a stable order: the benchmark kernels in the harness's order, then the layer
// kernels. Built once per process (a few milliseconds).
std::span<const RegistryEntry> registry();

// The entry called `name`; NotFound saying so, with the names that contain `name` (or how to list
// them) as the hint.
absl::StatusOr<const RegistryEntry*> find_kernel(std::string_view name);

// The entry's program lowered for `target`, the build named as the entry; errors from building or
// lowering name the kernel and the target.
absl::StatusOr<jit::ProgramBuild> registry_build(const RegistryEntry& entry,
                                                 const dsl::Target& target);

// The builds of every entry (or of `names` when not empty) for `target`, in registry order. An
// error for a target with no compiled kernels (cpu), an unknown name, or an entry that does not
// lower.
absl::StatusOr<std::vector<jit::Build>> registry_builds(const dsl::Target& target,
                                                        std::span<const std::string> names = {});

}  // namespace monotile::kernels
