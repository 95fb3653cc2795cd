// simplify: constant folding, CSE and DCE, repeated until the program stops changing.
#pragma once

#include "dsl/ir.h"

namespace monotile::dsl {

Program simplify(const Program& program);

}  // namespace monotile::dsl
