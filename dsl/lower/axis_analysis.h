// Pass: axis analysis. Computes an AxisInfo for every value (forward, in program order) so that loads
// and stores can be vectorized and all-true masks dropped. Pointer parameters are assumed aligned to
// LowerOptions::pointer_alignment bytes; integer parameters are assumed nothing.
#pragma once

#include "dsl/lower/lowering_state.h"

namespace monotile::dsl::lower {

void analyze_axes(LoweringState& state);

}  // namespace monotile::dsl::lower
