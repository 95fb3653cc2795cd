// Dead-code elimination: removes ops whose results are unused and that have no side effect.
// Stores, atomics, fences, barriers, wait_until, acquire loads, asserts and prints are side
// effects; a loop or branch is kept when its results are used or its regions have a side effect.
#pragma once

#include "dsl/ir.h"

namespace monotile::dsl {

Program eliminate_dead_code(const Program& program);

}  // namespace monotile::dsl
