// Pass: layout assignment. Gives every non-lazy tile a distributed layout: loads and stores a blocked
// layout with 16-byte vectors, reductions a slice of their operand's layout, dots the matrix unit's
// accumulator layout, elementwise ops their strongest operand's layout. Lazy tiles (constants, aranges,
// broadcasts and pure functions of those) get none and are built in each user's layout, so a reduced
// row broadcast back over its parent costs no shared-memory round trip. A load whose users all want
// another layout of its shape is issued in that layout instead of being converted.
#pragma once

#include "dsl/lower/lowering_state.h"

namespace monotile::dsl::lower {

void assign_layouts(LoweringState& state);

// The blocked layout the program uses by default for tiles of `shape` (vector width from the
// narrowest element any load or store of that shape moves, so that it moves 16 bytes per access).
Layout default_layout(const LoweringState& state, const std::vector<int64_t>& shape);

// Whether `code` is a pure elementwise op (its result element i depends on operand elements i only).
bool is_elementwise(OpCode code);

}  // namespace monotile::dsl::lower
