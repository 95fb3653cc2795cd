// The stand-ins' GEMV: y[t, n] = bf16(sum_k x[t, k] W[n, k]) with f32 accumulation and one
// rounding, as a vLLM bf16 linear layer stores it. One program per (block of W's rows, token):
// simple and correct first; every row of W is read once per token (the stand-ins run at decode
// widths of at most 16 tokens).
#pragma once

#include <string>

#include "dsl/ir.h"
#include "kernels/standins/grid.h"

namespace monotile::kernels::standins {

struct LinearShape {
  int rows = 0;      // N: W's rows (y's columns)
  int cols = 0;      // K: W's columns
  int x_stride = 0;  // elements between x's rows (>= cols)
  int y_stride = 0;  // elements between y's rows (>= rows)
  int block_rows = 32;
  int block_cols = 128;
};

// The shape of a dense [rows, cols] weight over dense rows of x and y.
LinearShape linear_shape(int rows, int cols);

// Parameters: x (ptr<bf16>), w (ptr<bf16> [rows, cols]), y (ptr<bf16>). Grid: linear_grid.
dsl::Program linear_program(const LinearShape& shape);
Grid linear_grid(const LinearShape& shape, int tokens);

}  // namespace monotile::kernels::standins
