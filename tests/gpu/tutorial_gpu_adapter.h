// Runs the tutorials on a GPU without changing them: their sources are compiled with
// `interpret` defined as `interpret_on_gpu` (see tests/gpu/CMakeLists.txt), so each of their
// dsl::interp::interpret calls lands here. The interpreter runs first on a copy of the memory (it
// checks every access: an out-of-bounds program is refused before it can fault the GPU context, with
// the interpreter's message); then the program runs on the GPU from the same inputs, and the GPU's
// results are what the host buffers hold afterwards, so the tutorial's own checks judge the GPU.
// Without a GPU the calling test is marked skipped (after an interpreter-only run).
#pragma once

#include <span>

#include "absl/status/status.h"
#include "dsl/interp/interpreter.h"

namespace monotile::dsl::interp {

absl::Status interpret_on_gpu(const Program& program, const LaunchGrid& grid, std::span<const ArgValue> args,
                              const InterpretOptions& options);

}  // namespace monotile::dsl::interp
