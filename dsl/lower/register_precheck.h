// Before any code is generated: a tile whose own registers (its elements a thread holds, in 32-bit
// registers) exceed what a thread has cannot be compiled without spilling heavily, so the lowering
// refuses it at once, naming the op's line, instead of letting the compiler spend its time and
// then fail without naming a tile.
#pragma once

#include "absl/status/status.h"
#include "dsl/lower/lowering_state.h"

namespace monotile::dsl::lower {

absl::Status check_tile_registers(const LoweringState& state);

}  // namespace monotile::dsl::lower
