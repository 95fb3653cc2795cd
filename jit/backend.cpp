// Chooses the vendor backend by the target's vendor.
#include "jit/backend.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "jit/hiprtc.h"
#include "jit/nvrtc.h"

namespace monotile::jit {

absl::StatusOr<std::unique_ptr<Compiler>> make_backend_compiler(const dsl::Target& target) {
  switch (target.vendor()) {
    case dsl::Vendor::kNvidia: return make_nvrtc_compiler(target);
    case dsl::Vendor::kAmd: return make_hiprtc_compiler(target);
    case dsl::Vendor::kCpu: break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "no compiler for target \"", target.str(),
      "\": the cpu target runs on the interpreter; hint: use an sm_* or gfx* target"));
}

}  // namespace monotile::jit
