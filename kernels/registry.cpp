// The registry's table: bench_kernels() as they are, then K1 at the K3 TP 8 rank 0 shapes (layer 1,
// one request of q = 4, a pending delta), shaped per target by k1_for_target, and K2 at the same
// rank's shapes (layer 13, 4 rows).
#include "kernels/registry.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dsl/error.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/k2.h"
#include "model/config.h"
#include "support/check.h"
#include "support/status_macros.h"

namespace monotile::kernels {
namespace {

jit::ProgramBuildOptions default_options(const dsl::Target&) {
  return {};
}

RegistryEntry bench_entry(bench::BenchKernel kernel) {
  RegistryEntry entry;
  entry.name = kernel.program.name;
  entry.family = KernelFamily::kBench;
  entry.description = absl::StrCat("benchmark kernel (kernels/bench), launched on grid ",
                                   absl::StrJoin(kernel.grid, "x"));
  entry.grid = kernel.grid;
  entry.workspaces = std::move(kernel.workspaces);
  entry.program = [program = std::move(kernel.program)](const dsl::Target&) { return program; };
  entry.options = default_options;
  return entry;
}

// K1 at the K3 TP 8 rank's shapes: one request of q = 4 with a pending delta, layer 1 (one block
// source). Its program's name (k1_name) spells the per-target shape of the work; the registry's
// name is the same on every target.
absl::StatusOr<RegistryEntry> k1_entry() {
  MT_ASSIGN_OR_RETURN(model::ModelConfig config, model::load_config("k3"));
  MT_ASSIGN_OR_RETURN(model::RankDims dims, model::rank_dims(config, 8, 0));
  MT_ASSIGN_OR_RETURN(k3::K1Build build,
                      k3::k1_build(config, 1, dims.kda_heads, static_cast<int>(dims.in_proj_rows),
                                   /*tokens=*/4, /*q=*/4, /*state_len=*/6, /*delta=*/true));
  RegistryEntry entry;
  entry.name = "k3_k1_tp8_t4_q4";
  entry.family = KernelFamily::kLayer;
  entry.description =
      "K1, the KDA layer's first launch (kernels/k3/k1.h), K3 TP 8 rank shapes, 4 tokens of q 4";
  entry.program = [build](const dsl::Target& target) {
    return k3::k1_program(k3::k1_for_target(build, target));
  };
  entry.options = default_options;
  return entry;
}

// K2 at the K3 TP 8 rank's shapes: 4 rows of layer 13 (an ordinary MoE layer).
absl::StatusOr<RegistryEntry> k2_entry() {
  MT_ASSIGN_OR_RETURN(model::ModelConfig config, model::load_config("k3"));
  MT_ASSIGN_OR_RETURN(model::RankDims dims, model::rank_dims(config, 8, 0));
  MT_ASSIGN_OR_RETURN(k3::K2Build build,
                      k3::k2_build(config, dims, 13, static_cast<int>(dims.kda_projection), /*tokens=*/4));
  RegistryEntry entry;
  entry.name = "k3_k2_tp8_t4";
  entry.family = KernelFamily::kLayer;
  entry.description = "K2, o_proj to the MoE output (kernels/k3/k2.h), K3 TP 8 rank shapes, 4 rows";
  entry.program = [build](const dsl::Target& target) { return k3::k2_program(k3::k2_for_target(build, target)); };
  entry.options = default_options;
  return entry;
}

std::vector<RegistryEntry> make_registry() {
  std::vector<RegistryEntry> entries;
  for (bench::BenchKernel& kernel : bench::bench_kernels())
    entries.push_back(bench_entry(std::move(kernel)));
  absl::StatusOr<RegistryEntry> k1 = k1_entry();
  MT_CHECK(k1.ok(), "the embedded k3 config gives K1 a build");
  entries.push_back(*std::move(k1));
  absl::StatusOr<RegistryEntry> k2 = k2_entry();
  MT_CHECK(k2.ok(), "the embedded k3 config gives K2 a build");
  entries.push_back(*std::move(k2));
  return entries;
}

}  // namespace

std::span<const RegistryEntry> registry() {
  static const std::vector<RegistryEntry> entries = make_registry();
  return entries;
}

absl::StatusOr<const RegistryEntry*> find_kernel(std::string_view name) {
  std::vector<std::string> similar;
  for (const RegistryEntry& entry : registry()) {
    if (entry.name == name) return &entry;
    if (!name.empty() && entry.name.find(name) != std::string::npos) similar.push_back(entry.name);
  }
  std::string hint;
  if (similar.empty()) {
    hint = "`monotile compile --list` lists the registered kernels";
  } else {
    const size_t shown = std::min<size_t>(similar.size(), 6);
    hint = absl::StrCat(
        "did you mean ", absl::StrJoin(similar.begin(), similar.begin() + shown, ", "),
        similar.size() > shown ? absl::StrCat(" (", similar.size() - shown, " more)") : "");
  }
  return absl::NotFoundError(
      absl::StrCat("no kernel \"", std::string(name), "\" in the registry; hint: ", hint));
}

absl::StatusOr<jit::ProgramBuild> registry_build(const RegistryEntry& entry,
                                                 const dsl::Target& target) {
  dsl::Program program;
  try {
    program = entry.program(target);
  } catch (const dsl::Error& error) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel \"", entry.name, "\" for ", target.str(), ": ", error.what()));
  }
  MT_ASSIGN_OR_RETURN(jit::ProgramBuild made,
                      jit::make_build(program, target, entry.options(target)));
  made.build.name =
      entry.name;  // what the user asked for, on every target (the entry point keeps the program's)
  return made;
}

absl::StatusOr<std::vector<jit::Build>> registry_builds(const dsl::Target& target,
                                                        std::span<const std::string> names) {
  if (target.vendor() == dsl::Vendor::kCpu) {
    return absl::InvalidArgumentError(
        absl::StrCat("target \"", target.str(),
                     "\" has no compiled kernels: it runs on the interpreter; hint: "
                     "name GPU targets such as sm_90a or gfx90a"));
  }
  std::vector<const RegistryEntry*> chosen;
  if (names.empty()) {
    for (const RegistryEntry& entry : registry()) chosen.push_back(&entry);
  } else {
    for (const std::string& name : names) {
      MT_ASSIGN_OR_RETURN(const RegistryEntry* entry, find_kernel(name));
      chosen.push_back(entry);
    }
  }
  std::vector<jit::Build> builds;
  for (const RegistryEntry* entry : chosen) {
    MT_ASSIGN_OR_RETURN(jit::ProgramBuild made, registry_build(*entry, target));
    builds.push_back(std::move(made.build));
  }
  return builds;
}

}  // namespace monotile::kernels
