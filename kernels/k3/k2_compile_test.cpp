// K2's stages compile for every target at K3's TP 8 rank shapes and k3-tiny's, with no spills on
// NVIDIA and no scratch memory anywhere; the resources are printed for docs/perf.md. gfx942 skips
// where this machine's hiprtc cannot build it (the GPU machine's can).
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "jit/compiler.h"
#include "jit/program_build.h"
#include "kernels/k3/k2.h"
#include "kernels/k3/mxfp4_gemv.h"
#include "model/config.h"

namespace monotile::kernels::k3 {
namespace {

std::vector<K2Build> builds() {
  std::vector<K2Build> out;
  model::ModelConfig k3 = *model::load_config("k3");
  model::RankDims dims = *model::rank_dims(k3, 8, 0);
  for (int tokens : {4, 16}) out.push_back(*k2_build(k3, dims, 13, static_cast<int>(dims.kda_projection), tokens));
  out.push_back(*k2_build(k3, dims, 12, static_cast<int>(dims.kda_projection), 8));  // block write
  model::ModelConfig tiny = *model::load_config("k3-tiny");
  model::RankDims tiny_dims = *model::rank_dims(tiny, 1, 0);
  out.push_back(*k2_build(tiny, tiny_dims, 1, static_cast<int>(tiny_dims.kda_projection), 8));
  return out;
}

void expect_compiles(const std::string& arch) {
  dsl::Target target = *dsl::Target::parse(arch);
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for " << arch << ": " << compiler.status();
  for (K2Build build : builds()) {
    build = k2_for_target(build, target);
    SCOPED_TRACE(k2_name(build));
    absl::StatusOr<jit::ProgramBuild> made = jit::make_build(k2_program(build), target);
    ASSERT_TRUE(made.ok()) << made.status();
    std::vector<std::string> names;
    for (const dsl::lower::KernelParam& param : made->params) names.push_back(param.name);
    EXPECT_EQ(names, k2_parameters(build));
    absl::StatusOr<jit::CompileResult> result = (*compiler)->compile(made->build.request());
    if (!result.ok() && arch == "gfx942" && absl::IsUnimplemented(result.status())) {
      GTEST_SKIP() << "this hiprtc cannot build gfx942: " << result.status();
    }
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->report.stack_frame, 0) << "scratch memory";
    if (target.vendor() == dsl::Vendor::kNvidia) {
      EXPECT_EQ(result->report.spill_stores, 0);
    }
    std::cout << "resources " << arch << " " << k2_name(build) << ": registers " << result->report.registers
              << ", shared " << result->report.shared_memory + made->build.launch.dynamic_shared_memory
              << " B, spills " << result->report.spill_stores << ", stack " << result->report.stack_frame << "\n";
  }
}

// The routed experts' MXFP4 GEMVs at K3's TP 8 shapes: w13 (768 rows, K = 3584) and w2 (3584 rows,
// K = 384), 16 tokens, 128-wide K steps (384 is not a multiple of 256).
void expect_mxfp4_compiles(const std::string& arch) {
  dsl::Target target = *dsl::Target::parse(arch);
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for " << arch << ": " << compiler.status();
  const bool amd = target.vendor() == dsl::Vendor::kAmd;
  for (auto [n, k] : {std::pair<int64_t, int64_t>{768, 3584}, {3584, 384}}) {
    absl::StatusOr<jit::ProgramBuild> made =
        jit::make_build(mxfp4_gemv_program(n, k, 16, amd ? 4 : 8, 128), target);
    ASSERT_TRUE(made.ok()) << made.status();
    absl::StatusOr<jit::CompileResult> result = (*compiler)->compile(made->build.request());
    if (!result.ok() && arch == "gfx942" && absl::IsUnimplemented(result.status())) {
      GTEST_SKIP() << "this hiprtc cannot build gfx942: " << result.status();
    }
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->report.stack_frame, 0);
    EXPECT_EQ(result->report.spill_stores, 0);
    std::cout << "resources " << arch << " mxfp4_gemv n " << n << " k " << k << ": registers "
              << result->report.registers << ", spills " << result->report.spill_stores << "\n";
  }
}

TEST(K2Compile, Sm90a) { expect_compiles("sm_90a"); }
TEST(K2Compile, Mxfp4Sm90a) { expect_mxfp4_compiles("sm_90a"); }
TEST(K2Compile, Mxfp4Gfx90a) { expect_mxfp4_compiles("gfx90a"); }
TEST(K2Compile, Mxfp4Gfx942) { expect_mxfp4_compiles("gfx942"); }
TEST(K2Compile, Gfx90a) { expect_compiles("gfx90a"); }
TEST(K2Compile, Gfx942) { expect_compiles("gfx942"); }

}  // namespace
}  // namespace monotile::kernels::k3
