// The dense MLP's activation (k3_layer.md 5.3, 5.7): act[t, i] = bf16(SiTU(g, u)) with g = gu[t,
// i], u = gu[t, I + i] (the gate_up GEMV's bf16 output), SiTU(g, u) = beta tanh(g / beta)
// sigmoid(g) linear_beta tanh(u / linear_beta) in f32, rounded once.
#pragma once

#include "dsl/ir.h"
#include "kernels/standins/grid.h"

namespace monotile::kernels::standins {

struct SituShape {
  int intermediate = 0;  // I
  float beta = 4.0f;
  float linear_beta = 25.0f;
  int block = 1024;  // columns per program
};

// Parameters: gu (ptr<bf16> [T, 2 I]), act (ptr<bf16> [T, I]). Grid: situ_grid.
dsl::Program situ_program(const SituShape& shape);
Grid situ_grid(const SituShape& shape, int tokens);

}  // namespace monotile::kernels::standins
