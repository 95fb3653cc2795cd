// The tutorials' compile check without changing them: their sources are compiled with `interpret`
// defined as `interpret_after_compiling` (see tests/conformance/CMakeLists.txt), so each program they
// run is first compiled for sm_90a and gfx90a under the default resource policy (once per program),
// then interpreted as usual, so their own checks still hold.
#include <cstdio>
#include <set>
#include <span>

#include "absl/status/status.h"
#include "dsl/interp/interpreter.h"
#include "dsl/program_hash.h"
#include "jit/compiler.h"
#include "support/status_macros.h"
#include "tests/conformance/compile_targets.h"

namespace monotile::dsl::interp {

absl::Status interpret_after_compiling(const Program& program, const LaunchGrid& grid, std::span<const ArgValue> args,
                                       const InterpretOptions& options);

absl::Status interpret_after_compiling(const Program& program, const LaunchGrid& grid, std::span<const ArgValue> args,
                                       const InterpretOptions& options) {
  static std::set<uint64_t> compiled;
  if (compiled.insert(program_hash(program)).second) {
    MT_ASSIGN_OR_RETURN(std::vector<jit::Build> builds, conformance::ci_builds(std::span<const Program>(&program, 1)));
    for (const jit::Build& build : builds) {
      if (!jit::make_compiler(build.target).ok()) continue;  // reported by the compile test's skip
      absl::StatusOr<jit::CompiledBuild> result = conformance::fresh_jit().compile_build(build);
      if (!result.ok()) return result.status();
      std::printf("tutorial program \"%s\" compiled for %s: %d registers, no spills, no scratch (%.2f s)\n",
                  program.name.c_str(), build.target.str().c_str(), result->report.registers, result->seconds);
    }
  }
  return interpret(program, grid, args, options);
}

}  // namespace monotile::dsl::interp
