// Program -> Build: lowering's output moved into the fields the JIT keys and the launcher reads.
#include "jit/program_build.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace monotile::jit {

absl::StatusOr<ProgramBuild> make_build(const dsl::Program& program, const dsl::Target& target,
                                        const ProgramBuildOptions& options) {
  absl::StatusOr<dsl::lower::LoweredKernel> lowered = dsl::lower::lower(program, target, options.lower);
  if (!lowered.ok()) {
    return with_context(lowered.status(), absl::StrCat("make_build of \"", program.name, "\" for ", target.str()));
  }
  ProgramBuild result{Build(program.name, std::move(lowered->kernel_name), std::move(lowered->source), target),
                      std::move(lowered->params)};
  Build& build = result.build;
  build.options = options.options;
  // #line directives are there for a profiler, which needs the compiler's line table to use them.
  if (options.lower.line_directives || dsl::lower::line_info_requested()) {
    build.options.push_back(target.vendor() == dsl::Vendor::kNvidia ? "-lineinfo" : "-gline-tables-only");
  }
  build.generator_version = std::string(dsl::lower::kLoweringVersion);
  build.launch.block_x = lowered->block_threads;
  build.launch.dynamic_shared_memory = lowered->dynamic_shared_bytes;
  build.launch.programmatic_dependency = lowered->waits_for_grid_dependency;
  build.policy = options.policy;
  build.origins = std::move(lowered->origins);
  return result;
}

}  // namespace monotile::jit
