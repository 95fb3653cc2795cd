// The square GEMM in the DSL, as a Triton user writes it: tile-row groups for L2 reuse, a range
// over K loading one A and one B tile per step into dot. Nothing here names a vendor or a stage
// count: the lowering decides how the loads reach the matrix unit.
#include "kernels/bench/gemm.h"

#include <string>

#include "dsl/dsl.h"
#include "support/check.h"

namespace monotile::kernels::bench {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

Program gemm_program(int m, int n, int k, const GemmTiles& tiles) {
  MT_CHECK(m % tiles.block_m == 0 && n % tiles.block_n == 0 && k % tiles.block_k == 0,
           "gemm tiles must divide the shape");
  Builder b("gemm_m" + std::to_string(m) + "_n" + std::to_string(n) + "_k" + std::to_string(k),
            {.num_warps = tiles.num_warps});
  auto a = b.arg("a", ptr(bf16)), w = b.arg("b", ptr(bf16)), c = b.arg("c", ptr(bf16));
  const int tiles_m = m / tiles.block_m, tiles_n = n / tiles.block_n;
  const int in_group = tiles.group_m * tiles_n;
  auto pid = program_id(0);
  auto first_m = (pid / in_group) * tiles.group_m;
  auto group_size = minimum(tiles_m - first_m, tiles.group_m);
  auto pid_m = first_m + pid % group_size;
  auto pid_n = (pid % in_group) / group_size;
  auto rows = pid_m * tiles.block_m + arange(0, tiles.block_m);
  auto cols = pid_n * tiles.block_n + arange(0, tiles.block_n);
  auto a_rows = a + col(rows).to(i64) * k;
  auto b_rows = w + col(cols).to(i64) * k;
  auto acc = range(0, k, tiles.block_k, zeros({tiles.block_m, tiles.block_n}, f32), [&](Value k0, Value acc) {
    auto ks = row(k0 + arange(0, tiles.block_k));
    return dot(load(a_rows + ks), trans(load(b_rows + ks)), acc);
  });
  // C is written once and never read here: streaming stores keep L2 for the A and B panels.
  store(c + col(rows).to(i64) * n + row(cols), acc.to(bf16), {.cache = Cache::streaming});
  return b.finish();
}

BenchKernel gemm_kernel(int m, int n, int k, const GemmTiles& tiles) {
  return {gemm_program(m, n, k, tiles), {(m / tiles.block_m) * (n / tiles.block_n), 1, 1}};
}

std::vector<GemmTiles> gemm_tile_candidates() {
  return {
      {},
      {.block_m = 128, .block_n = 256, .block_k = 32, .group_m = 8, .num_warps = 8},
      {.block_m = 256, .block_n = 128, .block_k = 32, .group_m = 8, .num_warps = 8},
      {.block_m = 128, .block_n = 128, .block_k = 32, .group_m = 8, .num_warps = 4},
      {.block_m = 128, .block_n = 128, .block_k = 64, .group_m = 8, .num_warps = 4},
      {.block_m = 128, .block_n = 128, .block_k = 32, .group_m = 8, .num_warps = 8},
  };
}

}  // namespace monotile::kernels::bench
