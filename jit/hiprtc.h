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

// Fails when libamdhip64 or comgr cannot be loaded, or when the installed hiprtc cannot build the
// target (checked against the installed version, never by asking the compiler: it would abort).
absl::StatusOr<std::unique_ptr<Compiler>> make_hiprtc_compiler(const dsl::Target& target);

struct HipVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
};

// Whether hiprtc `hip` can build `target`: ok, or FailedPrecondition saying which version is needed.
absl::Status check_hiprtc_supports(const dsl::Target& target, HipVersion hip, int comgr_major,
                                   int comgr_minor);

}  // namespace monotile::jit
