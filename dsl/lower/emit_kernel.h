// Pass: emission. Wraps the lowered op statements into one complete kernel: the shared prelude (our
// 16-bit float types, rounding, NaN-propagating min/max, index helpers), the vendor's prelude, the
// extern "C" __global__ signature with __launch_bounds__, and the per-thread preamble. No #include.
#pragma once

#include "dsl/lower/lower.h"
#include "dsl/lower/lowering_state.h"
#include "dsl/lower/op_lowering.h"

namespace monotile::dsl::lower {

LoweredKernel emit_kernel(const LoweringState& state, const LoweredBody& body);

// The kernel's extern "C" name for a program name: letters, digits and '_' kept, others '_'.
std::string kernel_name_for(std::string_view program_name);

}  // namespace monotile::dsl::lower
