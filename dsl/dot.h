// Matrix products and the MXFP4 dequantization that feeds them.
#pragma once

#include <optional>
#include "support/source_location.h"

#include "dsl/dtype.h"
#include "dsl/value.h"

namespace monotile::dsl {

// acc + a @ b with a [M, K] and b [K, N] both f16, both bf16 or both f32; accumulates in f32 and
// returns f32 [M, N]. acc (f32 [M, N]) defaults to zeros. With a Target given to the Builder, K is
// checked against the matrix unit here; otherwise when the program is verified for a target.
Value dot(const Value& a, const Value& b, std::optional<Value> acc = std::nullopt,
          SourceLocation loc = SourceLocation::current());

// MXFP4 to floats: packed mxfp4 [..., n/2] (two e2m1 per byte, low nibble first) and scales u8
// [..., n/32] (ue8m0 exponents, one per 32 values) -> `out` [..., n] (f32, bf16 or f16).
Value dequant_mxfp4(const Value& packed, const Value& scales, ElementType out = bf16,
                    SourceLocation loc = SourceLocation::current());

}  // namespace monotile::dsl
