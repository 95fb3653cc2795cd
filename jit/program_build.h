// make_build: a tile program lowered for one target, as a Build the JIT compiles (source, entry,
// launch block, dynamic shared memory, the lowering's version stamp, resource policy), together
// with the kernel's parameter list so that every launch can be checked against the signature.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dsl/ir.h"
#include "dsl/lower/lower.h"
#include "dsl/target.h"
#include "jit/build.h"

namespace monotile::jit {

// Every field that changes the code object joins jit/direct_mode.cpp's direct_key (the policy is
// checked again on every hit instead).
struct ProgramBuildOptions {
  dsl::lower::LowerOptions lower;
  ResourcePolicy policy;             // default: no spills, no scratch, shared memory within the target
  std::vector<std::string> options;  // extra compiler flags
};

struct ProgramBuild {
  Build build;
  // The kernel's parameters in launch order (what runtime::Kernel checks arguments against).
  std::vector<dsl::lower::KernelParam> params;
};

// Lowers `program` for `target` and fills the Build. Errors are the lowering's (InvalidArgument for
// a target that cannot run it, Unimplemented for an uncovered op), prefixed with the program's name
// and the target.
absl::StatusOr<ProgramBuild> make_build(const dsl::Program& program, const dsl::Target& target,
                                        const ProgramBuildOptions& options = {});

}  // namespace monotile::jit
