// Every benchmark kernel lowers through jit::make_build and compiles for sm_90a with no spills and
// no stack, with the harness's parameter names in order. Skips cleanly without NVRTC.
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

TEST(BenchKernelsCompile, Sm90aNoSpills) {
  dsl::Target target = *dsl::Target::parse("sm_90a");
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for sm_90a: " << compiler.status();
  for (const BenchKernel& kernel : bench_kernels()) {
    SCOPED_TRACE(kernel.program.name);
    absl::StatusOr<jit::ProgramBuild> made = jit::make_build(kernel.program, target);
    ASSERT_TRUE(made.ok()) << made.status();
    EXPECT_EQ(made->build.kernel_name, kernel.program.name);
    const std::string& name = kernel.program.name;
    if (name.starts_with("copy_")) {
      EXPECT_EQ(param_names(*made), (std::vector<std::string>{"src", "dst", "n"}));
    } else if (name.starts_with("rmsnorm_")) {
      EXPECT_EQ(param_names(*made), (std::vector<std::string>{"x", "w", "y", "eps"}));
    } else {
      EXPECT_EQ(param_names(*made), (std::vector<std::string>{"x", "y", "cols"}));
    }
    absl::StatusOr<jit::CompileResult> result = (*compiler)->compile(made->build.request());
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->report.spill_stores, 0);
    EXPECT_EQ(result->report.spill_loads, 0);
    EXPECT_EQ(result->report.stack_frame, 0);
    EXPECT_FALSE(result->code_object.empty());
  }
}

}  // namespace
}  // namespace monotile::kernels::bench
