// Random tensor contents made on the device: element i of a tensor is a pure function of (key, i),
// a 32-bit integer hash of the index under the tensor's key, so a fill is deterministic by seed and
// costs one write per element however large the tensor (k3's weights do not fit a host's memory in
// one piece, and their upload would dominate a run). The value is low + span * u, u uniform in
// [0, 1) from the hash's top 24 bits: a bf16 or f32 weight, or a byte floor(low + span * u).
#pragma once

#include <cstdint>

#include "dsl/dtype.h"
#include "dsl/ir.h"

namespace monotile::kernels::standins {

// Elements each program instance writes.
inline constexpr int64_t kRandomFillBlock = 4096;

// Parameters: out (ptr<`type`> [n]), n (i64), key (u32), low (f32), span (f32). `type` is bf16, f32
// or u8. Grid: cdiv(n, kRandomFillBlock) programs.
dsl::Program random_fill_program(dsl::ElementType type);

// The hash the program computes, for tests and host mirrors: the element's uniform u in [0, 1).
double random_fill_uniform(uint32_t key, int64_t index);

}  // namespace monotile::kernels::standins
