// CI targets, a throw-away cache, and builds with the default resource policy.
#include "tests/conformance/compile_targets.h"

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <unistd.h>

#include "jit/program_build.h"
#include "support/check.h"
#include "support/status_macros.h"

namespace monotile::conformance {
namespace {

// print and device_assert format their message through printf (on AMD, assert's message too), whose
// arguments need a stack frame; nothing else may use scratch.
bool has_debug_output(const dsl::Block& block) {
  for (const dsl::Op& op : block.ops) {
    if (op.code == dsl::OpCode::kPrint || op.code == dsl::OpCode::kAssert) return true;
    for (const dsl::Block& region : op.regions) {
      if (has_debug_output(region)) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<dsl::Target> ci_targets() {
  std::vector<dsl::Target> targets;
  for (const char* text : {"sm_90a", "gfx90a"}) {
    absl::StatusOr<dsl::Target> target = dsl::Target::parse(text);
    MT_CHECK(target.ok());
    targets.push_back(*target);
  }
  return targets;
}

jit::Jit& fresh_jit() {
  static jit::Jit* jit = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "monotile-ci-compile-XXXXXX").string();
    MT_CHECK(mkdtemp(pattern.data()) != nullptr);
    static const std::filesystem::path dir = pattern;
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    });
    jit::JitConfig config = jit::JitConfig::from_environment();
    config.cache = cache::Config{};
    config.cache.writable_dir = dir / "cache";
    config.failed_dir = dir / "failed";
    config.dump_dir.clear();
    return new jit::Jit(config);
  }();
  return *jit;
}

absl::StatusOr<std::vector<jit::Build>> ci_builds(std::span<const dsl::Program> programs) {
  std::vector<jit::Build> builds;
  for (const dsl::Target& target : ci_targets()) {
    for (const dsl::Program& program : programs) {
      jit::ProgramBuildOptions options;
      options.policy.allow_scratch = has_debug_output(program.body);
      MT_ASSIGN_OR_RETURN(jit::ProgramBuild build, jit::make_build(program, target, options));
      builds.push_back(std::move(build.build));
    }
  }
  return builds;
}

}  // namespace monotile::conformance
