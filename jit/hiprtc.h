// hiprtc (inside libamdhip64), loaded with dlopen, compiling in this process: an HSA code object
// for a gfx target, its resources read by comgr, ISA on request. hiprtc 5.2 aborts the process on
// some inputs, so callers use it through the worker process (compiler.h) unless told otherwise.
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dsl/target.h"
#include "jit/compiler.h"

namespace monotile::jit {

// Fails when libamdhip64 or comgr cannot be loaded. Whether it builds the target is
// check_compiler_target's question: an older hiprtc aborts on an architecture it does not know, so
// only a probe compile in the worker can tell, and check_hiprtc_supports is the advice for a refusal.
absl::StatusOr<std::unique_ptr<Compiler>> make_hiprtc_compiler(const dsl::Target& target);

struct HipVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
};

// Whether hiprtc `hip` is recent enough to be expected to build `target`: ok, or FailedPrecondition
// saying which version is needed (the refusal where a probe is not possible or failed).
absl::Status check_hiprtc_supports(const dsl::Target& target, HipVersion hip, int comgr_major,
                                   int comgr_minor);

}  // namespace monotile::jit
