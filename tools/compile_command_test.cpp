// `monotile compile` end to end on the built binary: a registered kernel compiled then a cache hit,
// kernel files (tools/testdata) built against the build tree's package, and each error message:
// a DSL mistake at its line, a kernel that throws, a C++ error with the compiler's message, a file
// that names no kernel, a missing file, an unknown name, an unknown target, no compiler, no package.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/test_support.h"
#include "tests/testing/command.h"

namespace monotile::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Runs `monotile compile <args>` with a cache under `dir` and `environment` ("NAME=VALUE "...),
// stdout and stderr captured together.
testing::CommandResult compile(const std::string& args, const jit::testing::TempDir& dir,
                               const std::string& environment = "") {
  return monotile::testing::run_command("env MONOTILE_CACHE_DIR='" +
                                        (dir.path() / "cache").string() + "' " + environment +
                                        MONOTILE_BINARY " compile " + args + " 2>&1");
}

std::string data(const std::string& file) {
  return std::string(MONOTILE_TEST_DATA) + "/" + file;
}

TEST(CompileCommand, RegisteredKernelCompilesThenHits) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  jit::testing::TempDir dir;
  testing::CommandResult cold = compile("rmsnorm_rows4_h7168 --target sm_90a", dir);
  EXPECT_EQ(cold.status, 0) << cold.output;
  EXPECT_THAT(cold.output, HasSubstr("rmsnorm_rows4_h7168 sm_90a: compiled in "));
  EXPECT_THAT(cold.output, HasSubstr("spill stores 0, spill loads 0"));
  EXPECT_THAT(cold.output, HasSubstr("1 builds: 0 cache hits, 1 compiled, 0 failed"));

  testing::CommandResult warm = compile("rmsnorm_rows4_h7168 --target sm_90a --report", dir);
  EXPECT_EQ(warm.status, 0) << warm.output;
  EXPECT_THAT(warm.output, ::testing::ContainsRegex("rmsnorm_rows4_h7168 +sm_90a .* hit"));
  EXPECT_THAT(warm.output, HasSubstr("1 builds (1 unique): 1 hits, 0 misses, 0 failed"));
}

TEST(CompileCommand, ListNamesTheRegisteredKernels) {
  jit::testing::TempDir dir;
  testing::CommandResult run = compile("--list", dir);
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("rmsnorm_rows4_h7168"));
  EXPECT_THAT(run.output, HasSubstr("k3_k1_"));
}

TEST(CompileCommand, KernelFileCompilesEachKernelForEachTargetThenHits) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  MT_SKIP_WITHOUT_COMPILER("gfx90a");
  jit::testing::TempDir dir;
  testing::CommandResult cold =
      compile(data("scale_add.cpp") + " --target sm_90a,gfx90a --print-source", dir);
  EXPECT_EQ(cold.status, 0) << cold.output;
  EXPECT_THAT(cold.output, HasSubstr("test_scale_add_b128 sm_90a: compiled in "));
  EXPECT_THAT(cold.output, HasSubstr("test_scale_add_b128 gfx90a: compiled in "));
  // The second kernel depends on the target: 8 warps of 32 or 64 lanes.
  EXPECT_THAT(cold.output, HasSubstr("test_scale_add_b256 sm_90a: compiled in "));
  EXPECT_THAT(cold.output, HasSubstr("test_scale_add_b512 gfx90a: compiled in "));
  EXPECT_THAT(cold.output, HasSubstr("// ---- test_scale_add_b128 for sm_90a"));
  EXPECT_THAT(cold.output, HasSubstr("extern \"C\""));
  EXPECT_THAT(cold.output, HasSubstr("4 builds: 0 cache hits, 4 compiled, 0 failed"));

  testing::CommandResult warm = compile(data("scale_add.cpp") + " --target sm_90a,gfx90a", dir);
  EXPECT_EQ(warm.status, 0) << warm.output;
  EXPECT_THAT(warm.output, HasSubstr("test_scale_add_b128 gfx90a: cache hit in "));
  EXPECT_THAT(warm.output, HasSubstr("4 builds: 4 cache hits, 0 compiled, 0 failed"));
}

TEST(CompileCommand, DslMistakeNamesTheLineExpectedActualAndHintOnce) {
  jit::testing::TempDir dir;
  testing::CommandResult run = compile(data("mask_mismatch.cpp") + " --target sm_90a,gfx90a", dir);
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_THAT(
      run.output,
      HasSubstr("kernel \"bad_mask(128)\" (MONOTILE_KERNEL at mask_mismatch.cpp:15) for "
                "sm_90a, gfx90a: load at mask_mismatch.cpp:11: mask shape [8] does not match "
                "pointer shape [128]; hint: the mask needs the pointer's shape"));
  EXPECT_THAT(run.output, HasSubstr("2 builds: 0 cache hits, 0 compiled, 2 failed"));
}

TEST(CompileCommand, KernelThatThrowsIsNamedWithItsLine) {
  jit::testing::TempDir dir;
  testing::CommandResult run = compile(data("throws.cpp") + " --target sm_90a", dir);
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("kernel \"picky(100)\" (MONOTILE_KERNEL at throws.cpp:17) for sm_90a: "
                        "threw hidden must be a multiple of 64"));
}

TEST(CompileCommand, CxxErrorShowsTheCompilersMessage) {
  jit::testing::TempDir dir;
  testing::CommandResult run = compile(data("syntax_error.cpp") + " --target sm_90a", dir);
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("syntax_error.cpp:9:"));  // the compiler's own line
  EXPECT_THAT(run.output, HasSubstr("error: expected primary-expression"));
  // ($CXX may name another g++, as on the GPU machine.)
  EXPECT_THAT(run.output,
              ::testing::ContainsRegex("syntax_error.cpp\" did not compile \\([^ ]*g\\+\\+ exited "
                                       "with 1; its messages are above\\); the command was: "));
}

TEST(CompileCommand, FileWithoutKernelSaysHowToNameOne) {
  jit::testing::TempDir dir;
  testing::CommandResult run = compile(data("no_kernel.cpp") + " --target sm_90a", dir);
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_THAT(
      run.output,
      HasSubstr("no_kernel.cpp\" names no kernel to compile; hint: after the function that "
                "builds the program, add a line such as MONOTILE_KERNEL(my_kernel(7168));"));
}

TEST(CompileCommand, MissingFileIsMisuse) {
  jit::testing::TempDir dir;
  testing::CommandResult run = compile(data("nosuch.cpp"), dir);
  EXPECT_EQ(run.status, 2) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("nosuch.cpp\" does not exist; hint: give the path of a .cpp that uses "
                        "MONOTILE_KERNEL, or a registered kernel's name"));
}

TEST(CompileCommand, UnknownNameSuggestsOrSaysHowToList) {
  jit::testing::TempDir dir;
  testing::CommandResult run = compile("rmsnorm_rows4", dir);
  EXPECT_EQ(run.status, 2) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("no kernel \"rmsnorm_rows4\" in the registry; hint: did you mean "
                        "rmsnorm_rows4_h7168"));
  EXPECT_THAT(run.output, HasSubstr("usage: monotile compile"));
  testing::CommandResult other = compile("nosuch", dir);
  EXPECT_EQ(other.status, 2) << other.output;
  EXPECT_THAT(other.output,
              HasSubstr("hint: `monotile compile --list` lists the registered kernels"));
}

TEST(CompileCommand, UnknownTargetIsMisuse) {
  jit::testing::TempDir dir;
  testing::CommandResult run = compile("rmsnorm_rows4_h7168 --target sm_90a,sm_91", dir);
  EXPECT_EQ(run.status, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("invalid target \"sm_91\""));
  testing::CommandResult cpu = compile("rmsnorm_rows4_h7168 --target cpu", dir);
  EXPECT_EQ(cpu.status, 2) << cpu.output;
  EXPECT_THAT(cpu.output, HasSubstr("target \"cpu\" has no compiled kernels"));
}

TEST(CompileCommand, CxxflagsReachTheCompiler) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  jit::testing::TempDir dir;
  testing::CommandResult run =
      compile(data("scale_add.cpp") + " --target sm_90a", dir, "CXXFLAGS='-DTEST_BLOCK=64 -Wall' ");
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("test_scale_add_b64 sm_90a: compiled in "));
}

TEST(CompileCommand, MissingCompilerSaysWhichAndHow) {
  jit::testing::TempDir dir;
  testing::CommandResult run =
      compile(data("scale_add.cpp") + " --target sm_90a", dir, "CXX=/nonexistent/c++ ");
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_THAT(
      run.output,
      HasSubstr("cannot run the C++ compiler \"/nonexistent/c++\": No such file or directory; "
                "hint: install g++, or set CXX to a C++20 compiler"));
}

TEST(CompileCommand, WrongPackageDirSaysWhatAPackageHolds) {
  jit::testing::TempDir dir;
  testing::CommandResult run = compile(data("scale_add.cpp") + " --target sm_90a", dir,
                                       "MONOTILE_PACKAGE_DIR=" + dir.path().string() + " ");
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_THAT(run.output,
              HasSubstr("MONOTILE_PACKAGE_DIR \"" + dir.path().string() +
                        "\" holds no monotile package (include/monotile/dsl/kernel_file.h and "
                        "libmonotile.so); hint: set it to the prefix given to cmake --install"));
}

// gfx942 needs a newer hiprtc than some machines have: the JIT's refusal, once, and the other
// targets still compile.
TEST(CompileCommand, UnbuildableTargetFailsAloneWithTheJitsMessage) {
  MT_SKIP_WITHOUT_COMPILER("gfx90a");
  jit::testing::TempDir dir;
  testing::CommandResult run = compile(data("scale_add.cpp") + " --target gfx90a,gfx942", dir);
  if (run.status == 0) GTEST_SKIP() << "this hiprtc builds gfx942";
  EXPECT_EQ(run.status, 1) << run.output;
  EXPECT_THAT(run.output, HasSubstr("test_scale_add_b128 gfx90a: compiled in "));
  EXPECT_THAT(run.output, HasSubstr("test_scale_add_b128 gfx942: FAILED"));
  EXPECT_THAT(run.output, HasSubstr("cannot compile for gfx942"));
  EXPECT_THAT(run.output, HasSubstr("4 builds: 0 cache hits, 2 compiled, 2 failed"));
}

TEST(CompileCommand, MisuseSaysWhatIsWrong) {
  jit::testing::TempDir dir;
  testing::CommandResult two = compile("rmsnorm_rows4_h7168 softmax_rows8192_cols4096", dir);
  EXPECT_EQ(two.status, 2) << two.output;
  EXPECT_THAT(two.output, HasSubstr("monotile compile: one kernel file or name expected, got "
                                    "\"rmsnorm_rows4_h7168\" and \"softmax_rows8192_cols4096\""));
  testing::CommandResult none = compile("--report", dir);
  EXPECT_EQ(none.status, 2) << none.output;
  EXPECT_THAT(none.output, HasSubstr("monotile compile: no kernel file or name"));
  testing::CommandResult jobs = compile("rmsnorm_rows4_h7168 --jobs=0", dir);
  EXPECT_EQ(jobs.status, 2) << jobs.output;
  EXPECT_THAT(jobs.output, HasSubstr("monotile compile: --jobs takes a positive integer, got \"0\""));
  testing::CommandResult other = compile("rmsnorm_rows4_h7168 --bundle x", dir);
  EXPECT_EQ(other.status, 2) << other.output;
  EXPECT_THAT(other.output,
              HasSubstr("monotile compile: unknown option --bundle; hint: monotile compile --help lists its options"));
  testing::CommandResult help = compile("--help", dir);
  EXPECT_EQ(help.status, 0) << help.output;
  EXPECT_THAT(help.output, HasSubstr("usage: monotile compile FILE.cpp|NAME"));
}

}  // namespace
}  // namespace monotile::tools
