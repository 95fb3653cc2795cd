// The GEMM lowered for sm_90a: its K loop is pipelined (asynchronous 16-byte copies into shared
// memory, matrix loads, mma.sync), it compiles with no spills and no stack, and it takes the
// harness's argument names. Skips cleanly without NVRTC.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dsl/lower/lower.h"
#include "dsl/lower/matrix_unit.h"
#include "dsl/target.h"
#include "gtest/gtest.h"
#include "jit/compiler.h"
#include "jit/program_build.h"
#include "kernels/bench/gemm.h"

namespace monotile::kernels::bench {
namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The matrix path a configuration must take on sm_90a.
bool takes_warpgroup_mma(const GemmConfig& config) {
  dsl::KernelOptions options{.num_warps = config.num_warps, .num_stages = config.num_stages, .mma = config.mma};
  return dsl::lower::warpgroup_mma_fits(*dsl::Target::parse("sm_90a"), options, dsl::ScalarType::kBf16,
                                        dsl::ScalarType::kBf16, config.block_m, config.block_n, config.block_k);
}

void check_compiles(const BenchKernel& kernel, bool warpgroup = false) {
  dsl::Target target = *dsl::Target::parse("sm_90a");
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for sm_90a: " << compiler.status();
  absl::StatusOr<jit::ProgramBuild> made = jit::make_build(kernel.program, target);
  ASSERT_TRUE(made.ok()) << made.status();
  std::vector<std::string> names;
  for (const dsl::lower::KernelParam& param : made->params) names.push_back(param.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c"}));
  jit::CompileRequest request = made->build.request();
  request.want_assembly = true;
  absl::StatusOr<jit::CompileResult> result = (*compiler)->compile(request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->report.spill_stores, 0);
  EXPECT_EQ(result->report.spill_loads, 0);
  EXPECT_EQ(result->report.stack_frame, 0);
  const std::string& ptx = result->assembly;
  EXPECT_GT(count(ptx, "cp.async.cg.shared.global"), 0);
  if (warpgroup) {
    EXPECT_GT(count(ptx, "wgmma.mma_async.sync.aligned.m64n"), 0);
    EXPECT_GT(count(ptx, "fence.proxy.async.shared::cta"), 0);
    EXPECT_EQ(count(ptx, "ldmatrix"), 0);
    EXPECT_EQ(count(ptx, "mma.sync"), 0);
    // ptxas says so when it has to wait for each wgmma before the next (accumulators touched between).
    EXPECT_EQ(count(result->log, "serialized"), 0) << result->log;
  } else {
    EXPECT_GT(count(ptx, "ldmatrix.sync.aligned.m8n8.x4"), 0);
    EXPECT_GT(count(ptx, "mma.sync.aligned.m16n8k16"), 0);
  }
  EXPECT_EQ(count(ptx, "ld.global"), 0) << "operands must not pass through registers";
  if (std::getenv("MONOTILE_GEMM_PTX")) std::fprintf(stderr, "%s\n%s\n", result->log.c_str(), ptx.c_str());
  std::printf("%s: %d registers, %lld bytes of shared memory\n", kernel.program.name.c_str(), result->report.registers,
              static_cast<long long>(made->build.launch.dynamic_shared_memory));
}

// The exported GEMM takes wgmma; mma.sync at the same tiling stays a variant.
TEST(GemmCompile, Sm90aPipelinedNoSpills) {
  ASSERT_TRUE(takes_warpgroup_mma({}));
  check_compiles(gemm_kernel(4096, 4096, 4096), true);
  check_compiles(gemm_kernel(4096, 4096, 4096, {.mma = dsl::MmaKind::kWarp}), false);
}

TEST(GemmCompile, EveryVariantPipelinedNoSpills) {
  for (const GemmConfig& config : gemm_variants()) {
    SCOPED_TRACE(config.label);
    check_compiles(gemm_kernel(4096, 4096, 4096, config), takes_warpgroup_mma(config));
  }
}

// Two warpgroups along M with one instruction each per K step, and one warpgroup with two.
TEST(GemmCompile, WarpgroupMmaNoSpills) {
  check_compiles(gemm_kernel(4096, 4096, 4096, {.mma = dsl::MmaKind::kWarpgroupSerial}), true);
  check_compiles(gemm_kernel(256, 256, 256, {.block_m = 128, .block_n = 128, .block_k = 64, .group_m = 2,
                                             .num_warps = 4, .mma = dsl::MmaKind::kWarpgroup}),
                 true);
}

// A short K (three steps, a constant trip count) must not be unrolled into spills (it was: 255
// registers and 80 bytes of spills for this shape before the pipelined loop kept `unroll 1`).
TEST(GemmCompile, ShortConstantKDoesNotSpill) {
  check_compiles(gemm_kernel(384, 256, 96, {.block_m = 128, .block_n = 128, .block_k = 32, .group_m = 2, .num_warps = 4}));
}

TEST(GemmCompile, SmallTilesPipelined) {
  check_compiles(gemm_kernel(64, 96, 48, {.block_m = 32, .block_n = 32, .block_k = 16, .group_m = 2, .num_warps = 4}));
}

}  // namespace
}  // namespace monotile::kernels::bench
