// The IR text a pass dump shows: the front end's printer, with each value's layout and axis info
// once those passes have run (values keep their ids, so the annotations line up with %N).
#pragma once

#include <string>

#include "dsl/lower/lowering_state.h"

namespace monotile::dsl::lower {

std::string dump_program(const LoweringState& state, bool with_layouts, bool with_axis);

}  // namespace monotile::dsl::lower
