// The verifier's per-op rules: operand and result counts and types, attributes and region shapes
// for each OpCode, exactly as dsl/ir.h documents them.
#pragma once

#include <string>

#include "dsl/ir.h"

namespace monotile::dsl {

// What is wrong with `op` (operands and results already known to be defined values), or "".
std::string check_op(const Program& program, const Op& op);

// The memory dtypes each atomic takes, for the builder and the verifier alike (dsl/memory.h lists
// them): add i32/u32/i64/f16/bf16/f32/f64; max, min, xchg i32/u32/i64/f32/f64; and, or, xor and cas
// i32/u32/i64.
bool atomic_takes(AtomicKind kind, ScalarType type);
bool atomic_cas_takes(ScalarType type);

}  // namespace monotile::dsl
