// `monotile demo`: the compilers found with their identities, then the sample kernels compiled for
// sm_90a and gfx90a through the kernel cache, with hit/miss and resource reports. Runs without a
// GPU (device discovery and the sample's launch join once the runtime's discovery is built).
#include <cstdio>
#include <string>
#include <vector>

#include "jit/jit.h"
#include "kernels/registry.h"
#include "tools/build_report.h"
#include "tools/commands.h"

namespace monotile::tools {

int demo_command(Args args) {
  if (!args.empty()) {
    std::fprintf(stderr, "usage: monotile demo (no arguments; MONOTILE_CACHE_DIR picks the cache)\n");
    return 2;
  }
  jit::Jit jit(jit::JitConfig::from_environment());
  std::printf("devices: device discovery is not part of this build yet; compiling only\n\ncompilers:\n");
  std::vector<dsl::Target> demo_targets;
  for (const char* text : {"sm_90a", "gfx90a", "gfx942"}) {
    dsl::Target target = *dsl::Target::parse(text);
    absl::StatusOr<jit::Compiler*> compiler = jit.compiler(target);
    if (compiler.ok()) {
      std::printf("  %-8s %s\n", text, (*compiler)->identity().c_str());
      if (target.str() != "gfx942") demo_targets.push_back(target);
    } else {
      std::printf("  %-8s unavailable: %s\n", text, std::string(compiler.status().message()).c_str());
    }
  }
  std::vector<jit::Build> builds;
  for (const dsl::Target& target : demo_targets) {
    absl::StatusOr<std::vector<jit::Build>> found = kernels::registry_builds(target);
    if (found.ok()) builds.insert(builds.end(), found->begin(), found->end());
  }
  std::printf("\nsample kernels through the cache at %s:\n", jit.config().cache.writable_dir.string().c_str());
  std::fflush(stdout);
  jit::CompileAllResult result = compile_with_progress(jit, builds, 0, stderr);
  print_build_table(stdout, builds, result);
  std::printf("\nno GPU run: this build has no device discovery yet\n");
  return result.ok() ? 0 : 1;
}

}  // namespace monotile::tools
