// Compiles that abort or hang come back as errors while this process lives on: a real hiprtc abort
// (an MFMA intrinsic on gfx1030, which has no matrix unit: "LLVM ERROR: Cannot select") and a
// timeout (the worker's test-only sleep). No comgr-* folders are left behind.
#include <cstdlib>
#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/compiler.h"
#include "jit/jit.h"
#include "jit/test_support.h"

namespace monotile::jit {
namespace {

using ::testing::HasSubstr;

// The MFMA intrinsic called by its LLVM name, which the front end does not check against the arch.
constexpr const char* kAbortingSource =
    "typedef short mt_short4 __attribute__((ext_vector_type(4)));\n"
    "typedef float mt_float16 __attribute__((ext_vector_type(16)));\n"
    "__device__ mt_float16 mt_mfma(mt_short4, mt_short4, mt_float16, int, int, int)\n"
    "    __asm(\"llvm.amdgcn.mfma.f32.32x32x8bf16.1k\");\n"
    "extern \"C\" __global__ void mt_abort(mt_float16* c, const mt_short4* a) {\n"
    "  c[threadIdx.x] = mt_mfma(a[0], a[1], c[threadIdx.x], 0, 0, 0);\n"
    "}\n";

// Points TMPDIR at a fresh folder for the test's duration.
class ScopedTmpdir {
 public:
  explicit ScopedTmpdir(const std::filesystem::path& dir) {
    const char* old = std::getenv("TMPDIR");
    if (old != nullptr) old_ = old;
    had_ = old != nullptr;
    ::setenv("TMPDIR", dir.c_str(), 1);
  }
  ~ScopedTmpdir() {
    if (had_) ::setenv("TMPDIR", old_.c_str(), 1);
    else ::unsetenv("TMPDIR");
  }

 private:
  std::string old_;
  bool had_ = false;
};

TEST(Isolation, RealHiprtcAbortIsAnErrorNamingBuildTargetAndLog) {
  MT_SKIP_WITHOUT_COMPILER("gfx1030");
  testing::TempDir dir;
  std::filesystem::path tmp = dir.path() / "tmp";
  std::filesystem::create_directories(tmp);
  ScopedTmpdir scoped(tmp);
  Jit jit(testing::config_in(dir.path()));
  Build build("mfma_on_rdna", "mt_abort", kAbortingSource, *dsl::Target::parse("gfx1030"));
  absl::StatusOr<CompiledBuild> compiled = jit.compile_build(build);
  ASSERT_FALSE(compiled.ok());
  std::string message(compiled.status().message());
  EXPECT_EQ(compiled.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(message, HasSubstr("hiprtc could not compile build "));
  EXPECT_THAT(message, HasSubstr("\"mfma_on_rdna\" for gfx1030: the compiler crashed: its worker process died of "
                                 "signal 6 (SIGABRT"));
  EXPECT_THAT(message, HasSubstr("LLVM ERROR: Cannot select"));
  EXPECT_TRUE(std::filesystem::is_empty(tmp)) << "the worker's temporary files were left in " << tmp;

  // This process carries on compiling.
  Build fine("after_abort", "mt_fine", "extern \"C\" __global__ void mt_fine(float* x) { x[threadIdx.x] = 1.0f; }",
             *dsl::Target::parse("gfx1030"));
  absl::StatusOr<CompiledBuild> next = jit.compile_build(fine);
  EXPECT_TRUE(next.ok()) << next.status();
}

TEST(Isolation, TimeoutKillsTheWorkerAndReturnsAnError) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  CompilerOptions options;
  options.timeout_seconds = 1.0;
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = make_compiler(*dsl::Target::parse("sm_90a"), options);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  CompileRequest request{.kernel_name = "mt_sleepy",
                         .source = "extern \"C\" __global__ void mt_sleepy() {}",
                         .target = *dsl::Target::parse("sm_90a"),
                         .build_name = "sleepy",
                         .test_sleep_seconds = 60.0};
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<CompileResult> result = (*compiler)->compile(request);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("nvrtc could not compile \"sleepy\" for sm_90a: the compile did not finish within 1.0 s "
                        "and was killed"));
  EXPECT_LT(seconds, 10.0);
}

TEST(Isolation, MissingWorkerIsAnErrorWithAHint) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  ::setenv("MONOTILE_JIT_WORKER", "/nonexistent/monotile-jit-worker", 1);
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = make_compiler(*dsl::Target::parse("sm_90a"));
  ASSERT_TRUE(compiler.ok());
  CompileRequest request{.kernel_name = "mt_one",
                         .source = "extern \"C\" __global__ void mt_one() {}",
                         .target = *dsl::Target::parse("sm_90a")};
  absl::StatusOr<CompileResult> result = (*compiler)->compile(request);
  ::unsetenv("MONOTILE_JIT_WORKER");
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(std::string(result.status().message()),
              HasSubstr("the compile worker \"monotile-jit-worker\" was not found (looked at: "
                        "/nonexistent/monotile-jit-worker); hint: build the monotile_jit_worker target, or set "
                        "MONOTILE_JIT_WORKER to its path"));
}

TEST(Isolation, InProcessModeCompilesToo) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  CompilerOptions options;
  options.isolation = Isolation::kInProcess;
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = make_compiler(*dsl::Target::parse("sm_90a"), options);
  ASSERT_TRUE(compiler.ok());
  CompileRequest request{.kernel_name = "mt_one",
                         .source = "extern \"C\" __global__ void mt_one(int* x) { *x = 1; }",
                         .target = *dsl::Target::parse("sm_90a")};
  absl::StatusOr<CompileResult> result = (*compiler)->compile(request);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->code_object.empty());
}

}  // namespace
}  // namespace monotile::jit
