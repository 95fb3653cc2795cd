// Constant folding: ops whose operands are all constants become constants, computed with exactly
// the IR's dtype rules (integer wrap, f16/bf16 computed in f32 and rounded once), and identities
// (x + 0, x * 1, x / 1, select on a constant condition, addptr by 0) forward their operand; an if
// on a constant condition is replaced by the branch it takes.
// Transcendentals, undefined cases (division by zero, shifts past the width, float-to-int out of
// range) and memory are never folded. The result verifies whenever the input does.
#pragma once

#include "dsl/ir.h"

namespace monotile::dsl {

Program fold_constants(const Program& program);

}  // namespace monotile::dsl
