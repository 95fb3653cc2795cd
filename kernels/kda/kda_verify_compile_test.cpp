// The KDA verify kernels compile for sm_90a (every shape the harness runs) and gfx90a with no spills
// and no scratch, take the harness's parameter names in order, and move the state with 16-byte
// accesses (PTX v4 f32 loads and streaming stores). Skips cleanly without a compiler.
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "dsl/target.h"
#include "gtest/gtest.h"
#include "jit/compiler.h"
#include "jit/program_build.h"
#include "kernels/kda/kda_verify.h"

namespace monotile::kernels::kda {
namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

absl::StatusOr<jit::CompileResult> compile(const KdaVerifyConfig& config, const dsl::Target& target,
                                           jit::Compiler& compiler, std::vector<std::string>* names) {
  absl::StatusOr<jit::ProgramBuild> made = jit::make_build(kda_verify_program(config), target);
  if (!made.ok()) return made.status();
  for (const dsl::lower::KernelParam& param : made->params) names->push_back(param.name);
  jit::CompileRequest request = made->build.request();
  request.want_assembly = target.vendor() == dsl::Vendor::kNvidia;
  return compiler.compile(request);
}

const std::vector<std::string> kHarnessNames = {"q",     "k",       "v",           "g",
                                                "beta",  "a_log",   "dt_bias",     "state",
                                                "slot_stride", "state_indices", "num_accepted", "o"};

TEST(KdaVerifyCompile, EveryHarnessShapeOnSm90a) {
  dsl::Target target = *dsl::Target::parse("sm_90a");
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for sm_90a: " << compiler.status();
  for (int heads : {12, 32, 96}) {
    for (int requests : {1, 2, 4, 8, 16}) {
      KdaVerifyConfig config{.heads = heads, .requests = requests, .q = 4};
      SCOPED_TRACE(kda_verify_name(config));
      std::vector<std::string> names;
      absl::StatusOr<jit::CompileResult> result = compile(config, target, **compiler, &names);
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_EQ(names, kHarnessNames);
      EXPECT_EQ(result->report.spill_stores, 0);
      EXPECT_EQ(result->report.spill_loads, 0);
      EXPECT_EQ(result->report.stack_frame, 0);
      // The state: one 16-byte load per 4 values and q 16-byte streaming stores per 4 values.
      const KdaVerifyConfig resolved = resolve(config);
      const int per_thread = resolved.block_v * kHeadDim / (resolved.num_warps * 32);
      EXPECT_EQ(count(result->assembly, "ld.global.cs.v4.f32") + count(result->assembly, "ld.global.cs.v4.u32"),
                per_thread / 4)
          << result->assembly.substr(0, 4000);
      EXPECT_EQ(count(result->assembly, "st.global.cs.v4.f32") + count(result->assembly, "st.global.cs.v4.u32"),
                4 * per_thread / 4);
    }
  }
}

TEST(KdaVerifyCompile, VariantsOnSm90a) {
  dsl::Target target = *dsl::Target::parse("sm_90a");
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for sm_90a: " << compiler.status();
  std::vector<KdaVerifyConfig> variants = kda_verify_variants(96, 16, 4);
  for (const KdaVerifyConfig& config : kda_verify_variants(12, 1, 4)) variants.push_back(config);
  for (const KdaVerifyConfig& config : variants) {
    SCOPED_TRACE(kda_verify_name(config));
    EXPECT_TRUE(kda_verify_name(config).starts_with("kda_verify_h" + std::to_string(config.heads) +
                                                    "_n" + std::to_string(config.requests) +
                                                    "_q4__"));
    std::vector<std::string> names;
    absl::StatusOr<jit::CompileResult> result = compile(config, target, **compiler, &names);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(names, kHarnessNames);
    EXPECT_EQ(result->report.spill_stores, 0);
    EXPECT_EQ(result->report.spill_loads, 0);
    EXPECT_EQ(result->report.stack_frame, 0);
    EXPECT_GT(count(result->assembly, ".v4.f32") + count(result->assembly, ".v4.u32"), 0);
  }
}

TEST(KdaVerifyCompile, MultiRowReductionsTakeFewerShufflesOnSm90a) {
  // Per token two reductions over K of the state slice: R rows a lane over 32 lanes take 9 shuffles
  // (R = 4: 2 + 1 halving, 3 plain, 1 + 2 gather) or 16 (R = 8) instead of 5 R; the 1-row
  // reductions (norms, k . q) are the same in both.
  dsl::Target target = *dsl::Target::parse("sm_90a");
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for sm_90a: " << compiler.status();
  for (auto [block_v, num_warps, saved] :
       {std::tuple{8, 2, 4 * 2 * (20 - 9)}, std::tuple{32, 4, 4 * 2 * (40 - 16)}}) {
    KdaVerifyConfig config{.heads = 12,
                           .requests = 1,
                           .q = 4,
                           .block_v = block_v,
                           .num_warps = num_warps,
                           .multi_row_reductions = true};
    SCOPED_TRACE(block_v);
    std::vector<std::string> names;
    absl::StatusOr<jit::CompileResult> multi = compile(config, target, **compiler, &names);
    config.multi_row_reductions = false;
    absl::StatusOr<jit::CompileResult> butterfly = compile(config, target, **compiler, &names);
    ASSERT_TRUE(multi.ok() && butterfly.ok());
    EXPECT_EQ(
        count(butterfly->assembly, "shfl.sync.bfly") - count(multi->assembly, "shfl.sync.bfly"),
        saved);
  }
}

TEST(KdaVerifyCompile, Gfx90aWithoutSpillsOrScratch) {
  dsl::Target target = *dsl::Target::parse("gfx90a");
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for gfx90a: " << compiler.status();
  for (int block_v : {8, 32}) {
    KdaVerifyConfig config{.heads = 96, .requests = 16, .q = 4, .block_v = block_v};
    SCOPED_TRACE(block_v);
    std::vector<std::string> names;
    absl::StatusOr<jit::CompileResult> result = compile(config, target, **compiler, &names);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(names, kHarnessNames);
    EXPECT_EQ(result->report.spill_stores, 0);
    EXPECT_EQ(result->report.spill_loads, 0);
    EXPECT_EQ(result->report.stack_frame, 0);
  }
}

}  // namespace
}  // namespace monotile::kernels::kda
