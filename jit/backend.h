// The vendor backend for a target (NVRTC or hiprtc), compiling in this process, its errors not
// naming the build: what the worker process runs. Callers want make_compiler() (compiler.h).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "dsl/target.h"
#include "jit/compiler.h"

namespace monotile::jit {

absl::StatusOr<std::unique_ptr<Compiler>> make_backend_compiler(const dsl::Target& target);

}  // namespace monotile::jit
