// compile_programs: tile programs to loaded-ready code objects, the way an executor starts. Each
// program is built and looked up by direct mode on every core; only those missing there are lowered
// (on every core) and handed to compile_all, which finds them in the cache or compiles them; those
// then get direct entries, so the next process lowers none of them.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dsl/ir.h"
#include "dsl/lower/lowering_identity.h"
#include "dsl/target.h"
#include "jit/compile_all.h"
#include "jit/direct_mode.h"
#include "jit/jit.h"
#include "jit/program_build.h"

namespace monotile::jit {

struct CompilePrograms {
  ProgramBuildOptions build;
  CompileAllOptions compile;  // for the programs direct mode did not find
  // What direct entries are keyed by; nothing turns direct mode off.
  std::optional<std::string> lowering_identity = dsl::lower::lowering_identity();
};

struct CompiledPrograms {
  // One per program, in order.
  std::vector<absl::StatusOr<CompiledProgram>> results;
  size_t direct = 0;    // found by direct mode, not lowered
  size_t lowered = 0;   // lowered, then found in the cache or compiled
  size_t compiled = 0;  // compiled by this call (compile_all's misses)
};

// `programs` makes each program (run on the pool's threads, so it must be safe to run
// concurrently).
CompiledPrograms compile_programs(Jit& jit, std::span<const std::function<dsl::Program()>> programs,
                                  const dsl::Target& target, const CompilePrograms& options = {});

}  // namespace monotile::jit
