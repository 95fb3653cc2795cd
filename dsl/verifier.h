// The verifier: checks a Program is well formed (SSA with dominance, every op's operand and result
// types, region arity and yields, tile sizes a layout can hold). Errors name the op and its source
// line. Every program the builder makes verifies; passes and lowering may rely on it.
#pragma once

#include "absl/status/status.h"
#include "dsl/ir.h"
#include "dsl/target.h"

namespace monotile::dsl {

absl::Status verify(const Program& program);

// verify, plus what depends on the target: each dot's K against the matrix unit's minimum.
absl::Status verify_for_target(const Program& program, const Target& target);

}  // namespace monotile::dsl
