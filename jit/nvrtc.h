// NVRTC, loaded with dlopen, compiling in this process: CUBIN for the exact arch (sm_90a), the
// ptxas -v report parsed into a ResourceReport, PTX on request. Isolation is compiler.h's job.
#pragma once

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "dsl/target.h"
#include "jit/compiler.h"

namespace monotile::jit {

// Fails when libnvrtc cannot be loaded; check_target() refuses a compute capability it does not list.
absl::StatusOr<std::unique_ptr<Compiler>> make_nvrtc_compiler(const dsl::Target& target);

// Reads the "ptxas info" lines that -Xptxas -v writes into the program log for entry `kernel_name`.
absl::StatusOr<ResourceReport> parse_ptxas_log(std::string_view log, std::string_view kernel_name);

}  // namespace monotile::jit
