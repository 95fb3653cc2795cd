// The resource check a compiled build passes before anyone launches it: no spills, no scratch, shared
// memory within the target, the launch block within the kernel's limit, unless the build opts out.
#pragma once

#include "absl/status/status.h"
#include "jit/build.h"
#include "jit/resource_report.h"

namespace monotile::jit {

// FailedPrecondition naming the build, the target, what is over and the whole report, with a hint.
absl::Status check_resources(const Build& build, const ResourceReport& report);

}  // namespace monotile::jit
