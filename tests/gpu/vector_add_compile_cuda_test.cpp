// The GPU test's and the copy benchmark's kernels compile for sm_90a with the JIT's compiler on any
// machine (no GPU needed), without spilling: what reaches the GPU machine is known to build.
#include "gtest/gtest.h"
#include "jit/compiler.h"
#include "tests/gpu/copy_kernel_cuda.h"
#include "tests/gpu/vector_add_kernels_cuda.h"

namespace monotile {
namespace {

// Compiles `source` for sm_90a; the CUBIN and its report, or a skip without NVRTC.
void expect_compiles(const char* kernel_name, const char* source) {
  absl::StatusOr<dsl::Target> target = dsl::Target::parse("sm_90a");
  ASSERT_TRUE(target.ok());
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(*target);
  if (!compiler.ok()) GTEST_SKIP() << "no NVIDIA compiler here: " << compiler.status().message();
  jit::CompileRequest request{.kernel_name = kernel_name,
                              .source = source,
                              .target = *target,
                              .options = {},
                              .headers = {},
                              .build_name = kernel_name,
                              .build_key = {}};
  absl::StatusOr<jit::CompileResult> compiled = (*compiler)->compile(request);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  // A CUBIN is an ELF file.
  ASSERT_GE(compiled->code_object.size(), 4u);
  EXPECT_EQ(compiled->code_object.substr(0, 4), "\x7f" "ELF");
  EXPECT_EQ(compiled->report.spill_stores, 0);
  EXPECT_GT(compiled->report.registers, 0);
}

TEST(GpuTestKernels, VectorAddCompilesForSm90a) { expect_compiles("vector_add", kVectorAddKernels); }

TEST(GpuTestKernels, CopyKernelCompilesForSm90a) { expect_compiles("copy16", kCopyKernel); }

}  // namespace
}  // namespace monotile
