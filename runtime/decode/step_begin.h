// step_begin: the device epoch += 1, a launch of its own before a step's first layer kernel. Every
// hand-off flag of the layer kernels carries a tag made from the epoch, so bumping it is what makes
// the previous step's flags stale; as a launch (not a host write) it is captured into a graph and
// bumps the epoch at every replay.
#pragma once

#include "dsl/ir.h"

namespace monotile::runtime::decode {

// One program instance: epoch[0] = epoch[0] + 1. Parameter: epoch (ptr<i32>).
dsl::Program step_begin_program();

}  // namespace monotile::runtime::decode
