// Elementwise math functions. All but abs take floats only (f16/bf16 compute in f32 and round once);
// an integer tile is a dsl::Error whose hint says to convert it first.
#pragma once

#include "support/source_location.h"

#include "dsl/value.h"

namespace monotile::dsl {

#define MONOTILE_DSL_UNARY(name) \
  Value name(const Value& x, SourceLocation loc = SourceLocation::current());
MONOTILE_DSL_UNARY(exp)
MONOTILE_DSL_UNARY(exp2)
MONOTILE_DSL_UNARY(log)
MONOTILE_DSL_UNARY(log2)
MONOTILE_DSL_UNARY(sqrt)
MONOTILE_DSL_UNARY(rsqrt)  // 1 / sqrt(x)
MONOTILE_DSL_UNARY(sin)
MONOTILE_DSL_UNARY(cos)
MONOTILE_DSL_UNARY(tanh)
MONOTILE_DSL_UNARY(sigmoid)   // 1 / (1 + exp(-x))
MONOTILE_DSL_UNARY(softplus)  // log(1 + exp(x)), accurate for large x
MONOTILE_DSL_UNARY(erf)
MONOTILE_DSL_UNARY(floor)
MONOTILE_DSL_UNARY(ceil)
MONOTILE_DSL_UNARY(abs)  // integers (not i1) and floats
#undef MONOTILE_DSL_UNARY

}  // namespace monotile::dsl
