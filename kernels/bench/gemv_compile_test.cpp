// Every exported GEMV compiles for sm_90a with no spills and no stack, reads W only with 16-byte
// loads (the PTX's ld.global.*.v4), and declares x, w, y (and the split-K workspaces) in order.
// With MONOTILE_GEMV_DUMP=DIR set, each kernel's source, PTX and resource line go to DIR.
// Skips cleanly without NVRTC.
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "dsl/target.h"
#include "gtest/gtest.h"
#include "jit/compiler.h"
#include "jit/program_build.h"
#include "kernels/bench/bench_kernels.h"
#include "kernels/bench/gemv.h"

namespace monotile::kernels::bench {
namespace {

// How often `what` occurs in `text`.
int count(const std::string& text, const std::string& what) {
  int found = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++found;
  return found;
}

class GemvCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target_);
    if (!compiler.ok()) GTEST_SKIP() << "no compiler for sm_90a: " << compiler.status();
    compiler_ = *std::move(compiler);
  }

  // Compiles `kernel` and checks its resources; returns the PTX.
  std::string compile(const BenchKernel& kernel) {
    absl::StatusOr<jit::ProgramBuild> made = jit::make_build(kernel.program, target_);
    EXPECT_TRUE(made.ok()) << made.status();
    if (!made.ok()) return "";
    std::vector<std::string> names;
    for (const dsl::lower::KernelParam& param : made->params) names.push_back(param.name);
    std::vector<std::string> expected = {"x", "w", "y"};
    for (const BenchWorkspace& workspace : kernel.workspaces) expected.push_back(workspace.name);
    EXPECT_EQ(names, expected);
    jit::CompileRequest request = made->build.request();
    request.want_assembly = true;
    absl::StatusOr<jit::CompileResult> result = compiler_->compile(request);
    EXPECT_TRUE(result.ok()) << result.status();
    if (!result.ok()) return "";
    EXPECT_EQ(result->report.spill_stores, 0);
    EXPECT_EQ(result->report.spill_loads, 0);
    EXPECT_EQ(result->report.stack_frame, 0);
    if (const char* dir = std::getenv("MONOTILE_GEMV_DUMP")) {
      const std::string base = std::string(dir) + "/" + kernel.program.name;
      std::ofstream(base + ".cu") << made->build.source;
      std::ofstream(base + ".ptx") << result->assembly;
      std::ofstream(dir + std::string("/resources.txt"), std::ios::app)
          << kernel.program.name << " grid " << kernel.grid[0] << "x" << kernel.grid[1] << ": "
          << result->report.summary() << "\n";
    }
    return result->assembly;
  }

  dsl::Target target_ = *dsl::Target::parse("sm_90a");
  std::unique_ptr<jit::Compiler> compiler_;
};

TEST_F(GemvCompile, EveryHarnessShapeStreamsWWithSixteenByteLoads) {
  for (const BenchKernel& kernel : bench_kernels()) {
    // Variants (<name>__<label>) are VariantsCompileWithoutSpills's.
    if (!kernel.program.name.starts_with("gemv_") || kernel.program.name.find("__") != std::string::npos) continue;
    SCOPED_TRACE(kernel.program.name);
    std::string ptx = compile(kernel);
    // W's loads carry the streaming hint on the FMA path; on the matrix-unit path W and x move
    // as 16-byte loads or 16-byte asynchronous copies into shared memory (cp.async.cg: 16 only).
    const int wide = count(ptx, "ld.global.cs.v4.u32") + count(ptx, "ld.global.v4.u32") +
                     count(ptx, "ld.global.cg.v4.u32") + count(ptx, "cp.async.cg.shared.global");
    EXPECT_GT(wide, 0);
    EXPECT_EQ(count(ptx, "ld.global.cs.u16"), 0) << "a W load narrower than 16 bytes";
    EXPECT_EQ(count(ptx, "ld.global.cs.v2"), 0) << "a W load narrower than 16 bytes";
    EXPECT_EQ(count(ptx, "ld.local"), 0);
  }
}

TEST_F(GemvCompile, VariantsCompileWithoutSpills) {
  for (const BenchKernel& kernel : gemv_variant_kernels()) {
    SCOPED_TRACE(kernel.program.name);
    compile(kernel);
  }
}

TEST_F(GemvCompile, FmaPathHasNoSharedMemoryInItsLoop) {
  // m = 4 on the largest shape: the reductions over each thread's 8 products stay in registers;
  // only the final cross-warp exchange (none here: warps own rows) may use shared memory.
  GemvConfig config = gemv_config(kGemvFmaMaxRows, 6288, 7168);
  ASSERT_FALSE(config.matrix_unit);
  config.splits = 1;
  BenchKernel kernel = gemv_kernel(4, 6288, 7168, config);
  std::string ptx = compile(kernel);
  EXPECT_EQ(count(ptx, "bar.sync"), 0);
  EXPECT_EQ(count(ptx, "st.shared"), 0);
}

TEST_F(GemvCompile, SplitKResetsItsCounterWithAnAcqRelAtomic) {
  BenchKernel kernel = gemv_kernel(1, 768, 3584);
  ASSERT_GT(kernel.grid[1], 1);
  std::string ptx = compile(kernel);
  EXPECT_GT(count(ptx, "atom.acq_rel.gpu"), 0);
  EXPECT_GT(count(ptx, "ld.global.cg"), 0);  // the partials are read from L2, past a stale L1
}

}  // namespace
}  // namespace monotile::kernels::bench
