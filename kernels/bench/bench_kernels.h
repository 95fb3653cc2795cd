// The benchmark kernels the side-by-side harness (bench/, docs/bench.md) loads: copy, RMSNorm, row
// softmax and the decode GEMV, each a DSL program specialized per shape, named and parameterized
// exactly as the harness binds them (`python3 -m bench.run --list-kernels`), with its launch grid.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dsl/ir.h"

namespace monotile::kernels::bench {

// Elements of the copy's element type (i32) one program instance moves (kernels/bench/copy.h).
inline constexpr int kCopyBlock = 32768;

// dst = src over `bytes` bytes viewed as i32 (bytes a multiple of 4 * kCopyBlock); unmasked: launch
// exactly the returned grid. Parameters: src, dst (ptr<i32>). Name: copy_bytes{bytes}.
dsl::Program copy_program(int64_t bytes);

// y = x rsqrt(mean(x^2) + eps) w per row, bf16 in and out, f32 math, one bf16 rounding.
// Parameters: x, w, y (ptr<bf16>), eps (f32). One instance per row. Name: rmsnorm_rows{rows}_h{hidden}.
dsl::Program rms_norm_program(int rows, int hidden);

// y = softmax(x) per row, bf16 in and out, f32 math. Parameters: x, y (ptr<bf16>). One instance
// per row; `cols` must be a power of two or a multiple of 16. Name:
// softmax_rows{rows}_cols{cols}.
dsl::Program softmax_program(int rows, int cols);

// y = x W^T: x [m, k], w [n, k], y [m, n] bf16 row-major, f32 accumulation, one bf16 rounding,
// in the configuration gemv_config(m, n, k) chooses (kernels/bench/gemv.h). Parameters: x, w, y
// (ptr<bf16>) and, when K is split, the workspaces. Name: gemv_m{m}_k{k}_n{n}.
dsl::Program gemv_program(int m, int n, int k);

// When the harness zeroes a workspace (docs/bench.md): at load (the kernel leaves it as it found
// it), before every launch, or never.
enum class WorkspaceZero { kOnce, kEachLaunch, kNever };

// Scratch memory a kernel takes as a pointer parameter of the same name.
struct BenchWorkspace {
  std::string name;
  int64_t bytes = 0;
  WorkspaceZero zero = WorkspaceZero::kOnce;
};

// A benchmark kernel with the grid it is launched on.
struct BenchKernel {
  dsl::Program program;       // program.name is the exported name
  std::array<int, 3> grid{};  // the launch grid for the shape it is specialized for
  std::vector<BenchWorkspace> workspaces{};  // allocated by the launcher, passed by name
};

// Each program with its grid.
BenchKernel copy_kernel(int64_t bytes);
BenchKernel rms_norm_kernel(int rows, int hidden);
BenchKernel softmax_kernel(int rows, int cols);
BenchKernel gemv_kernel(int m, int n, int k);

// Every benchmark kernel the harness asks for that the DSL provides, in the harness's order.
std::vector<BenchKernel> bench_kernels();

}  // namespace monotile::kernels::bench
