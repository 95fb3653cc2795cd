// The benchmark kernels, written plainly in the DSL: the lowering's axis analysis turns each
// contiguous last dim into 16-byte accesses, so no kernel spells out vector widths.
#include "kernels/bench/bench_kernels.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <string>

#include "dsl/dsl.h"
#include "kernels/bench/copy.h"
#include "kernels/bench/gemm.h"
#include "kernels/bench/gemv.h"
#include "kernels/bench/softmax.h"
#include "kernels/kda/kda_verify.h"

namespace monotile::kernels::bench {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

Program rms_norm_program(int rows, int hidden) {
  Builder b("rmsnorm_rows" + std::to_string(rows) + "_h" + std::to_string(hidden), {.num_warps = 8});
  auto x = b.arg("x", ptr(bf16)), w = b.arg("w", ptr(bf16)), y = b.arg("y", ptr(bf16));
  auto eps = b.arg("eps", f32);
  auto base = program_id(0).to(i64) * hidden;
  auto cols = arange(0, hidden);
  auto v = load(x + base + cols).to(f32);
  auto rstd = rsqrt(sum(v * v) / float(hidden) + eps);
  store(y + base + cols, (v * rstd * load(w + cols).to(f32)).to(bf16));
  return b.finish();
}

BenchKernel rms_norm_kernel(int rows, int hidden) {
  BenchKernel kernel;
  kernel.program = rms_norm_program(rows, hidden);
  kernel.grid = {rows, 1, 1};
  return kernel;
}

std::vector<BenchKernel> bench_kernels() {
  std::vector<BenchKernel> kernels;
  for (int64_t bytes : {int64_t{64} << 20, int64_t{1} << 30}) kernels.push_back(copy_kernel(bytes));
  for (int rows : {4, 8, 16, 32, 64}) kernels.push_back(rms_norm_kernel(rows, 7168));
  kernels.push_back(softmax_kernel(8192, 4096));
  kernels.push_back(gemm_kernel(4096, 4096, 4096));
  for (int m : {1, 4, 8, 16, 32, 64}) {
    for (auto [k, n] : {std::pair{7168, 6288}, std::pair{1536, 7168}, std::pair{3584, 768}, std::pair{2304, 12288}}) {
      kernels.push_back(gemv_kernel(m, n, k));
    }
  }
  // The KDA spec-verify recurrence (kernels/kda), q = 4, at the harness's heads and requests.
  auto kda_kernel = [](const kda::KdaVerifyConfig& config) {
    BenchKernel kernel;
    kernel.program = kda::kda_verify_program(config);
    kernel.grid = kda::kda_verify_grid(config);
    return kernel;
  };
  for (int heads : {12, 32, 96}) {
    for (int requests : {1, 2, 4, 8, 16}) kernels.push_back(kda_kernel({.heads = heads, .requests = requests, .q = 4}));
  }
  // Other versions of the kernels above, measured beside them (exported as <name>__<label>).
  for (int64_t bytes : {int64_t{64} << 20, int64_t{1} << 30}) {
    for (const CopyConfig& config : copy_variants()) kernels.push_back(copy_kernel(bytes, config));
  }
  for (const SoftmaxConfig& config : softmax_variants()) kernels.push_back(softmax_kernel(8192, 4096, config));
  for (int heads : {12, 32, 96}) {
    for (int requests : {1, 2, 4, 8, 16}) {
      for (const kda::KdaVerifyConfig& config : kda::kda_verify_variants(heads, requests, 4)) {
        kernels.push_back(kda_kernel(config));
      }
    }
  }
  for (const GemmConfig& config : gemm_variants()) kernels.push_back(gemm_kernel(4096, 4096, 4096, config));
  for (BenchKernel& kernel : gemv_variant_kernels()) kernels.push_back(std::move(kernel));
  return kernels;
}

}  // namespace monotile::kernels::bench
