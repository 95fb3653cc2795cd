// The CI compile check shared by the conformance and tutorial compile tests: a program goes through
// make_build and the JIT for sm_90a and gfx90a under the default resource policy (no spills, no
// scratch), into a cache in a fresh temporary folder so that every build is really compiled.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dsl/ir.h"
#include "jit/compile_all.h"
#include "jit/jit.h"

namespace monotile::conformance {

// The targets every program must compile for.
std::vector<dsl::Target> ci_targets();

// A Jit whose cache lives in a new temporary folder (removed at exit).
jit::Jit& fresh_jit();

// Builds of `programs` for every CI target; a program with print or device_assert may use the stack
// frame printf needs (scratch), no other. A program that does not lower is an error naming it.
absl::StatusOr<std::vector<jit::Build>> ci_builds(std::span<const dsl::Program> programs);

}  // namespace monotile::conformance
