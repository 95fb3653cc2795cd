// Every benchmark kernel lowers through jit::make_build and compiles for sm_90a with no spills and
// no stack, with the harness's parameter names in order, and moves its data with 16-byte global
// accesses (the PTX's v4 loads and stores; the GEMV's small output excepted). Skips cleanly
// without NVRTC.
#include <memory>
#include <string>
#include <vector>

#include "dsl/target.h"
#include "gtest/gtest.h"
#include "jit/compiler.h"
#include "jit/program_build.h"
#include "kernels/bench/bench_kernels.h"

namespace monotile::kernels::bench {
namespace {

std::vector<std::string> param_names(const jit::ProgramBuild& made) {
  std::vector<std::string> names;
  for (const dsl::lower::KernelParam& param : made.params) names.push_back(param.name);
  return names;
}

// Every ld.global / st.global instruction's opcode in the PTX ("ld.global.cs.v4.u32", ...).
std::vector<std::string> global_accesses(const std::string& ptx) {
  std::vector<std::string> found;
  for (const char* op : {"ld.global", "st.global"}) {
    for (size_t at = ptx.find(op); at != std::string::npos; at = ptx.find(op, at + 1)) {
      size_t end = ptx.find_first_of(" \t", at);
      found.push_back(ptx.substr(at, end - at));
    }
  }
  return found;
}

TEST(BenchKernelsCompile, Sm90aNoSpills) {
  dsl::Target target = *dsl::Target::parse("sm_90a");
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for sm_90a: " << compiler.status();
  for (const BenchKernel& kernel : bench_kernels()) {
    SCOPED_TRACE(kernel.program.name);
    // The KDA kernels mix small loads (indices, v rows, beta) with their 16-byte state traffic:
    // kda_verify_compile_test checks their names, resources and state accesses.
    if (kernel.program.name.starts_with("kda_verify_")) continue;
    // The GEMM's operands move by asynchronous copies (no ld.global) and its C store comes from
    // accumulator fragments: gemm_compile_test checks its names, resources and its copy/mma path.
    if (kernel.program.name.starts_with("gemm_")) continue;
    absl::StatusOr<jit::ProgramBuild> made = jit::make_build(kernel.program, target);
    ASSERT_TRUE(made.ok()) << made.status();
    EXPECT_EQ(made->build.kernel_name, kernel.program.name);
    const std::string& name = kernel.program.name;
    if (name.starts_with("copy_")) {
      EXPECT_EQ(param_names(*made), (std::vector<std::string>{"src", "dst"}));
    } else if (name.starts_with("rmsnorm_")) {
      EXPECT_EQ(param_names(*made), (std::vector<std::string>{"x", "w", "y", "eps"}));
    } else if (name.starts_with("softmax_")) {
      EXPECT_EQ(param_names(*made), (std::vector<std::string>{"x", "y"}));
    } else if (name.starts_with("gemv_")) {
      std::vector<std::string> names = param_names(*made);
      names.resize(3);  // split-K kernels add their workspaces (gemv_compile_test checks them)
      EXPECT_EQ(names, (std::vector<std::string>{"x", "w", "y"}));
    }
    jit::CompileRequest request = made->build.request();
    request.want_assembly = true;
    absl::StatusOr<jit::CompileResult> result = (*compiler)->compile(request);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->report.spill_stores, 0);
    EXPECT_EQ(result->report.spill_loads, 0);
    EXPECT_EQ(result->report.stack_frame, 0);
    EXPECT_FALSE(result->code_object.empty());
    const std::vector<std::string> accesses = global_accesses(result->assembly);
    EXPECT_FALSE(accesses.empty());
    for (const std::string& access : accesses) {
      // The GEMV mixes small accesses (y, x's padded rows, split-K partials and counters) with its
      // 16-byte W loads: gemv_compile_test checks them apart.
      if (name.starts_with("gemv_")) continue;
      EXPECT_NE(access.find(".v4."), std::string::npos) << access;
    }
    // The row max is one NaN-propagating max per element on sm_80+, not a NaN test, select and add.
    if (name.starts_with("softmax_")) {
      EXPECT_NE(result->assembly.find("max.NaN.f32"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace monotile::kernels::bench
