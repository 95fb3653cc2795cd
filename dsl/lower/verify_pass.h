// Pass: verify. The front end's verifier (SSA, types, regions) plus what lowering needs of a program
// and a target: a GPU target, a power-of-two warp count that fits the block limit, tiles of positive
// size. Errors are InvalidArgument and name the program, the target and the limit.
#pragma once

#include "absl/status/status.h"
#include "dsl/lower/lowering_state.h"

namespace monotile::dsl::lower {

absl::Status verify_for_lowering(const LoweringState& state);

}  // namespace monotile::dsl::lower
