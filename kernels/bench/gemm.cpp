// The square GEMM in the DSL, as a Triton user writes it: tile-row groups for L2 reuse, a range
// over K loading one A and one B tile per step into dot. Nothing here names a vendor or a stage
// count: the lowering decides how the loads reach the matrix unit (a variant may ask for a count).
#include "kernels/bench/gemm.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "dsl/dsl.h"
#include "support/check.h"

namespace monotile::kernels::bench {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

Program gemm_program(int m, int n, int k, const GemmConfig& config) {
  MT_CHECK(m % config.block_m == 0 && n % config.block_n == 0 && k % config.block_k == 0,
           "gemm tiles must divide the shape");
  std::string name = absl::StrCat("gemm_m", m, "_n", n, "_k", k);
  if (!config.label.empty()) absl::StrAppend(&name, "__", config.label);
  Builder b(name, {.num_warps = config.num_warps, .num_stages = config.num_stages, .mma = config.mma});
  auto a = b.arg("a", ptr(bf16)), w = b.arg("b", ptr(bf16)), c = b.arg("c", ptr(bf16));
  const int tiles_m = m / config.block_m, tiles_n = n / config.block_n;
  const int in_group = config.group_m * tiles_n;
  auto pid = program_id(0);
  auto first_m = (pid / in_group) * config.group_m;
  auto group_size = minimum(tiles_m - first_m, config.group_m);
  auto pid_m = first_m + pid % group_size;
  auto pid_n = (pid % in_group) / group_size;
  auto rows = pid_m * config.block_m + arange(0, config.block_m);
  auto cols = pid_n * config.block_n + arange(0, config.block_n);
  auto a_rows = a + col(rows).to(i64) * k;
  auto b_rows = w + col(cols).to(i64) * k;
  auto acc = range(0, k, config.block_k, zeros({config.block_m, config.block_n}, f32), [&](Value k0, Value acc) {
    auto ks = row(k0 + arange(0, config.block_k));
    return dot(load(a_rows + ks), trans(load(b_rows + ks)), acc);
  });
  store(c + col(rows).to(i64) * n + row(cols), acc.to(bf16), {.cache = config.c_cache});
  return b.finish();
}

BenchKernel gemm_kernel(int m, int n, int k, const GemmConfig& config) {
  return {gemm_program(m, n, k, config), {(m / config.block_m) * (n / config.block_n), 1, 1}};
}

// Measured on the H200 at 4096^3 (docs/perf.md): the default 218.9 us; mma.sync at the same
// tiling 402.5 us (t128x128x32_w4, its fastest tiling, 350.7); wgmma waiting in each iteration
// 245.9; three stages 270.8 (copies one iteration ahead); 256 x 128 249.3; 128 x 128 on two
// warpgroups, two programs per SM 267.1; C through the normal cache policy 219.2.
std::vector<GemmConfig> gemm_variants() {
  auto tiles = [](int block_m, int block_n, int block_k, int num_warps, int num_stages) {
    GemmConfig config;
    config.label = absl::StrCat("t", block_m, "x", block_n, "x", block_k, "_w", num_warps);
    if (num_stages != 0) absl::StrAppend(&config.label, "_stages", num_stages);
    config.block_m = block_m;
    config.block_n = block_n;
    config.block_k = block_k;
    config.num_warps = num_warps;
    config.num_stages = num_stages;
    return config;
  };
  GemmConfig mma_sync;
  mma_sync.label = "mma_sync";
  mma_sync.mma = MmaKind::kWarp;
  GemmConfig mma_sync_tiles = tiles(128, 128, 32, 4, 0);
  mma_sync_tiles.label = absl::StrCat("mma_sync_", mma_sync_tiles.label);
  mma_sync_tiles.mma = MmaKind::kWarp;
  GemmConfig serial;
  serial.label = "wgmma_serial";
  serial.mma = MmaKind::kWarpgroupSerial;
  GemmConfig three;
  three.label = "stages3";
  three.num_stages = 3;
  GemmConfig cached;
  cached.label = "c_normal";
  cached.c_cache = CacheHint::kDefault;
  return {mma_sync, mma_sync_tiles, serial, three, cached, tiles(256, 128, 64, 8, 0), tiles(128, 128, 64, 8, 3)};
}

}  // namespace monotile::kernels::bench
