// The GPU test's kernels compile for sm_90a with the JIT's compiler on any machine (no GPU needed),
// without spilling: what the GPU test will load is known good before it reaches a GPU.
#include "gtest/gtest.h"
#include "jit/compiler.h"
#include "tests/gpu/vector_add_kernels_cuda.h"

namespace monotile {
namespace {

TEST(VectorAddKernels, CompileForSm90a) {
  absl::StatusOr<dsl::Target> target = dsl::Target::parse("sm_90a");
  ASSERT_TRUE(target.ok());
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(*target);
  if (!compiler.ok()) GTEST_SKIP() << "no NVIDIA compiler here: " << compiler.status().message();
  jit::CompileRequest request{.kernel_name = "vector_add",
                              .source = kVectorAddKernels,
                              .target = *target,
                              .options = {},
                              .headers = {},
                              .build_name = "gpu vector_add test kernels",
                              .build_key = {}};
  absl::StatusOr<jit::CompileResult> compiled = (*compiler)->compile(request);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  // A CUBIN is an ELF file.
  ASSERT_GE(compiled->code_object.size(), 4u);
  EXPECT_EQ(compiled->code_object.substr(0, 4), "\x7f" "ELF");
  EXPECT_EQ(compiled->report.spill_stores, 0);
  EXPECT_GT(compiled->report.registers, 0);
}

}  // namespace
}  // namespace monotile
