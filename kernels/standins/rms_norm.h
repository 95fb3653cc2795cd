// A row RMSNorm rounded once: y = bf16(x rsqrt(mean(x^2) + eps) w), f32 inside, as vLLM's fused
// q/kv RMSNorm of the MLA layer stores it. One program per token; x and y rows may be strided (x a
// slice of a wider row).
#pragma once

#include "dsl/ir.h"

namespace monotile::kernels::standins {

struct RmsNormShape {
  int width = 0;     // a power of two or a multiple of 16
  int x_stride = 0;  // elements between x's rows
  int y_stride = 0;
  float eps = 1e-5f;
};

// Parameters: x (ptr<bf16>), w (ptr<bf16> [width]), y (ptr<bf16>). Grid: T programs.
dsl::Program rms_norm_program(const RmsNormShape& shape);

}  // namespace monotile::kernels::standins
