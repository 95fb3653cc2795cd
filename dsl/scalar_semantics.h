// The IR's scalar semantics (ir.h), written once: comparisons, NaN-propagating min/max, the
// NaN-last order of argmax/sort, and rounding to f32/f16/bf16. The interpreter and constant folding
// both call these, so a folded constant always equals what the interpreter computes.
#pragma once

#include <cstdint>

#include "dsl/ir.h"

namespace monotile::dsl {

// IEEE comparison: with a NaN operand only kNe holds; -0 and +0 are equal.
bool compare(CmpPredicate predicate, double a, double b);
// Integers in their canonical int64 form (sign- or zero-extended from their dtype).
bool compare(CmpPredicate predicate, int64_t a, int64_t b);

// kMin/kMax on floats: IEEE 754-2019 minimum/maximum, as Triton's minimum/maximum with
// propagate_nan=ALL (MLIR's arith.minimumf/maximumf). A NaN operand gives the positive quiet NaN;
// -0 is below +0, whichever operand it is, so a reduction's result does not depend on its order.
double float_min(double a, double b);
double float_max(double a, double b);

// The order argmax/argmin/topk/sort use: `a` before `b` ascending, NaN greater than every number
// (two NaNs are unordered). -0 and +0 are equal here (ties go to the lower index).
bool nan_last_less(double a, double b);

// `value` rounded once, to nearest even, into the 16-bit format (f16: 5 exponent bits, bf16: 8),
// overflowing to infinity and keeping subnormals; a NaN keeps its sign and the top of its payload
// (quieted). Decoding is exact.
uint16_t f16_bits_from_double(double value);
uint16_t bf16_bits_from_double(double value);
double f16_bits_to_double(uint16_t bits);
double bf16_bits_to_double(uint16_t bits);

// Round trips: the nearest representable value, as a double (exact).
inline double round_to_f16(double value) {
  return f16_bits_to_double(f16_bits_from_double(value));
}
inline double round_to_bf16(double value) {
  return bf16_bits_to_double(bf16_bits_from_double(value));
}

// `value` rounded to the nearest value of float `type` (ties to even, overflow to infinity), for
// constants in the IR; f64 values and f16/bf16 NaNs are returned unchanged. Requires the default
// rounding mode.
double round_to_dtype(ScalarType type, double value);

}  // namespace monotile::dsl
