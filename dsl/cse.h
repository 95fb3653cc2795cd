// Common-subexpression elimination: a pure op identical to an earlier one that dominates it (same
// code, operands, attributes and result types) is removed and its results replaced by the earlier
// op's. Memory accesses, atomics, timers, synchronization, debugging ops and ops with regions are
// never merged.
#pragma once

#include "dsl/ir.h"

namespace monotile::dsl {

Program eliminate_common_subexpressions(const Program& program);

}  // namespace monotile::dsl
