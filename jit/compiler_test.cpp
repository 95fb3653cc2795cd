// The compilers through make_compiler: identities, up-front refusal, compile errors with their
// source lines, forced spills and scratch against the policy, PTX and ISA dumps.
#include "jit/compiler.h"

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/jit.h"
#include "jit/test_support.h"
#include "tests/jit_fixtures/samples.h"

namespace monotile::jit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::MatchesRegex;

dsl::Target target(const char* text) { return *dsl::Target::parse(text); }

TEST(Compiler, IdentitiesNameCompilerAndVersion) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  MT_SKIP_WITHOUT_COMPILER("gfx90a");
  EXPECT_THAT((*make_compiler(target("sm_90a")))->identity(), MatchesRegex("nvrtc [0-9]+\\.[0-9]+"));
  EXPECT_THAT((*make_compiler(target("gfx90a")))->identity(),
              MatchesRegex("hiprtc [0-9]+\\.[0-9]+\\.[0-9]+ \\+ comgr [0-9]+\\.[0-9]+"));
}

// Support for a newer architecture is decided by a probe compile in the worker: hiprtc 5.2 aborts
// on gfx942 (the probe's crash is the answer), HIP 5.7's hiprtc builds it.
TEST(Compiler, RefusesGfx942WhenTheProbeFails) {
  MT_SKIP_WITHOUT_COMPILER("gfx90a");
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = make_compiler(target("gfx942:sramecc+:xnack-"));
  if (compiler.ok()) GTEST_SKIP() << "the installed hiprtc builds gfx942: " << (*compiler)->identity();
  EXPECT_THAT(std::string(compiler.status().message()),
              HasSubstr("hiprtc cannot compile for gfx942:sramecc+:xnack-: gfx942 needs ROCm 6.0 or newer"));
  EXPECT_THAT(std::string(compiler.status().message()), HasSubstr("(a probe compile failed: "));
}

TEST(Compiler, RefusesGfx950NamingTheInstalledVersion) {
  MT_SKIP_WITHOUT_COMPILER("gfx90a");
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = make_compiler(target("gfx950"));
  if (compiler.ok()) GTEST_SKIP() << "the installed hiprtc builds gfx950: " << (*compiler)->identity();
  EXPECT_TRUE(absl::IsFailedPrecondition(compiler.status())) << compiler.status();
  EXPECT_THAT(std::string(compiler.status().message()),
              HasSubstr("hiprtc cannot compile for gfx950: gfx950 needs ROCm 6.4 or newer"));
  EXPECT_THAT(std::string(compiler.status().message()),
              ::testing::ContainsRegex("installed: hiprtc [0-9]+\\.[0-9]+\\.[0-9]+ with comgr"));
}

TEST(Compiler, InProcessIsolationRefusesByVersionWithoutProbing) {
  MT_SKIP_WITHOUT_COMPILER("gfx90a");
  CompilerOptions options;
  options.isolation = Isolation::kInProcess;  // a probe here could abort this test's process
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = make_compiler(target("gfx950"), options);
  if (compiler.ok()) GTEST_SKIP() << "the installed hiprtc is new enough for gfx950";
  EXPECT_THAT(std::string(compiler.status().message()), HasSubstr("gfx950 needs ROCm 6.4 or newer"));
  EXPECT_THAT(std::string(compiler.status().message()), Not(HasSubstr("probe")));
}

TEST(Compiler, CpuTargetHasNoCompiler) {
  EXPECT_THAT(std::string(make_compiler(dsl::Target::cpu()).status().message()),
              HasSubstr("no compiler for target \"cpu\""));
}

// A build whose source has an error on line 4.
Build broken(const char* target_text) {
  return Build("broken_sample", "mt_broken",
               "extern \"C\" __global__ void mt_broken(float* x) {\n"
               "  int i = threadIdx.x;\n"
               "  // the next line uses an undeclared name\n"
               "  x[i] = undeclared_value * 2.0f;\n"
               "}\n",
               target(target_text));
}

class CompileErrors : public ::testing::TestWithParam<const char*> {};

TEST_P(CompileErrors, NameTheBuildShowTheLineAndKeepTheSource) {
  MT_SKIP_WITHOUT_COMPILER(GetParam());
  testing::TempDir dir;
  Jit jit(testing::config_in(dir.path()));
  absl::StatusOr<CompiledBuild> compiled = jit.compile_build(broken(GetParam()));
  ASSERT_FALSE(compiled.ok());
  std::string message(compiled.status().message());
  EXPECT_THAT(message, MatchesRegex("(nvrtc|hiprtc) could not compile build [0-9a-f]{32} \"broken_sample\" for "
                                    "(sm_90a|gfx90a): (.|\n)*"));
  EXPECT_THAT(message, HasSubstr("undeclared_value"));
  EXPECT_THAT(message, HasSubstr(">     4 |   x[i] = undeclared_value * 2.0f;"));
  EXPECT_THAT(message, HasSubstr("the source is kept in " + (dir.path() / "failed").string()));
  std::vector<std::filesystem::path> kept;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir.path() / "failed")) kept.push_back(entry.path());
  EXPECT_GE(kept.size(), 2u);  // the folder, its source, its log
}

INSTANTIATE_TEST_SUITE_P(BothVendors, CompileErrors, ::testing::Values("sm_90a", "gfx90a"));

// Many values live at once under a 24-register cap: ptxas must spill.
Build spilling_nvidia() {
  Build build("forced_spill", "mt_spill",
              "extern \"C\" __global__ void mt_spill(const float* __restrict__ x, float* __restrict__ y) {\n"
              "  float v[48];\n"
              "  #pragma unroll\n"
              "  for (int i = 0; i < 48; ++i) v[i] = x[threadIdx.x + i * 1024];\n"
              "  float s = 0.0f;\n"
              "  #pragma unroll\n"
              "  for (int i = 0; i < 48; ++i) s += v[i] * v[47 - i] * v[(i * 7) % 48];\n"
              "  y[threadIdx.x] = s;\n"
              "}\n",
              target("sm_90a"));
  build.options = {"-maxrregcount=24"};  // the least ptxas accepts on sm_90
  return build;
}

TEST(ResourcePolicyOnRealBuilds, ForcedSpillFailsByDefault) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  testing::TempDir dir;
  Jit jit(testing::config_in(dir.path()));
  absl::StatusOr<CompiledBuild> compiled = jit.compile_build(spilling_nvidia());
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(compiled.status().message()),
              HasSubstr("build \"forced_spill\" for sm_90a fails the resource policy: it spills registers"));
}

TEST(ResourcePolicyOnRealBuilds, ForcedSpillPassesWhenAllowed) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  testing::TempDir dir;
  Jit jit(testing::config_in(dir.path()));
  Build build = spilling_nvidia();
  build.policy.allow_spills = true;
  build.policy.allow_scratch = true;
  absl::StatusOr<CompiledBuild> compiled = jit.compile_build(build);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_GT(compiled->report.spill_stores, 0);
  EXPECT_LE(compiled->report.registers, 24);
}

TEST(ResourcePolicyOnRealBuilds, AmdScratchFails) {
  MT_SKIP_WITHOUT_COMPILER("gfx90a");
  testing::TempDir dir;
  Jit jit(testing::config_in(dir.path()));
  Build build("dynamic_index", "mt_scratch",
              "extern \"C\" __global__ void mt_scratch(const int* idx, float* y) {\n"
              "  float table[64];\n"
              "  for (int i = 0; i < 64; ++i) table[i] = y[i * 64 + threadIdx.x];\n"
              "  y[threadIdx.x] = table[idx[threadIdx.x] & 63];\n"
              "}\n",
              target("gfx90a"));
  absl::StatusOr<CompiledBuild> compiled = jit.compile_build(build);
  ASSERT_FALSE(compiled.ok());
  EXPECT_THAT(std::string(compiled.status().message()),
              HasSubstr("build \"dynamic_index\" for gfx90a fails the resource policy: it uses"));
  EXPECT_THAT(std::string(compiled.status().message()), HasSubstr("bytes of scratch (local memory) per thread"));
}

TEST(Assembly, PtxForNvidia) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  testing::TempDir dir;
  Jit jit(testing::config_in(dir.path()));
  absl::StatusOr<std::string> ptx = jit.assembly(monotile::testing::samples::matrix_tile(target("sm_90a")));
  ASSERT_TRUE(ptx.ok()) << ptx.status();
  EXPECT_THAT(*ptx, HasSubstr(".entry mt_matrix_tile"));
  EXPECT_THAT(*ptx, HasSubstr("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
}

TEST(Assembly, IsaForAmd) {
  MT_SKIP_WITHOUT_COMPILER("gfx90a");
  testing::TempDir dir;
  Jit jit(testing::config_in(dir.path()));
  absl::StatusOr<std::string> isa = jit.assembly(monotile::testing::samples::matrix_tile(target("gfx90a")));
  ASSERT_TRUE(isa.ok()) << isa.status();
  EXPECT_THAT(*isa, HasSubstr("v_mfma_f32_32x32x8bf16_1k"));
}

}  // namespace
}  // namespace monotile::jit
