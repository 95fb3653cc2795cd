// The row softmax benchmark kernel (the harness's `softmax_rows{r}_cols{c}`, bf16 in and out, f32
// math) and the shapes of it the harness measures side by side: warps per row, rows per program,
// and exp as exp2 of a log2(e)-scaled argument with one reciprocal per row (the default) or as
// exp and a division per element.
#pragma once

#include <string>
#include <vector>

#include "dsl/ir.h"
#include "kernels/bench/bench_kernels.h"

namespace monotile::kernels::bench {

// The defaults are the exported softmax: the fastest shape measured on the H200 (docs/perf.md).
struct SoftmaxConfig {
  std::string label;         // "" for the exported kernel, else the variant's `__label`
  int num_warps = 8;
  int rows_per_program = 1;  // rows one program holds in registers (the grid is rows / this)
  bool exp2 = true;          // exp2((x - max) log2 e) and y = e * (1 / sum); else exp(x - max) / sum
};

// y = softmax(x) per row; `cols` a power of two or a multiple of 16, `rows` a multiple of
// rows_per_program (throws dsl::Error otherwise). Parameters: x, y (ptr<bf16>).
dsl::Program softmax_program(int rows, int cols, const SoftmaxConfig& config);
BenchKernel softmax_kernel(int rows, int cols, const SoftmaxConfig& config);

// The variants exported beside softmax_rows{r}_cols{c} as softmax_rows{r}_cols{c}__{label}.
std::vector<SoftmaxConfig> softmax_variants();

}  // namespace monotile::kernels::bench
