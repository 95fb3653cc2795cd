// The residual stream's update: prefix[t] = bf16(prefix[t] + a[t]) in place, or, where the prefix
// restarts (a block-write layer after its attention), prefix[t] = a[t]. Also the pending delta
// folded into the prefix. One program per token.
#pragma once

#include "dsl/ir.h"

namespace monotile::kernels::standins {

// Parameters: prefix (ptr<bf16> [T, hidden], updated in place), a (ptr<bf16> [T, hidden]).
// Grid: T programs.
dsl::Program residual_program(int hidden, bool restart);

}  // namespace monotile::kernels::standins
