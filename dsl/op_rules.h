// The verifier's per-op rules: operand and result counts and types, attributes and region shapes
// for each OpCode, exactly as dsl/ir.h documents them.
#pragma once

#include <string>

#include "dsl/ir.h"

namespace monotile::dsl {

// What is wrong with `op` (operands and results already known to be defined values), or "".
std::string check_op(const Program& program, const Op& op);

}  // namespace monotile::dsl
