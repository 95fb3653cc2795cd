// What a target's matrix unit needs of a dot: K at least, and a multiple of, the smallest k of
// the unit's shapes for the operand dtype. Shared by the builder and verify_for_target.
#pragma once

#include <cstdint>
#include <string>

#include "dsl/ir.h"
#include "dsl/target.h"

namespace monotile::dsl {

struct DotProblem {
  std::string what;  // empty when the dot is fine
  std::string expected;
  std::string actual;
  std::string hint;
};

// The problem with a dot of `operand` dtype and inner size `k` on `target`, if any. Targets without
// a matrix unit for that dtype (the CPU, f32 operands) accept every K.
DotProblem dot_problem(const Target& target, ScalarType operand, int64_t k);

}  // namespace monotile::dsl
