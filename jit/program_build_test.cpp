// make_build: the lowering's output in the Build's fields, and its errors with the program's name.
#include "jit/program_build.h"

#include <string>

#include "dsl/dsl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/test_support.h"

namespace monotile::jit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

dsl::Program vector_add() {
  using namespace monotile::dsl;  // NOLINT
  Builder b("vector_add", {.num_warps = 2});
  Value x = b.arg("x", ptr(f32)), out = b.arg("out", ptr(f32)), n = b.arg("n", i32);
  Value offsets = program_id(0) * 256 + arange(0, 256);
  store(out + offsets, load(x + offsets, offsets < n), offsets < n);
  return b.finish();
}

dsl::Target target(const char* text) { return *dsl::Target::parse(text); }

// Every op moved to another file and 7 lines down, as in a second checkout with a comment added.
void relocate(dsl::Block& block) {
  for (dsl::Op& op : block.ops) {
    op.loc.file = "/elsewhere/checkout/" + op.loc.file.substr(op.loc.file.rfind('/') + 1);
    op.loc.line += 7;
    for (dsl::Block& region : op.regions) relocate(region);
  }
}

TEST(MakeBuild, TheSourceDoesNotDependOnWhereTheProgramWasWritten) {
  dsl::Program here = vector_add(), there = vector_add();
  relocate(there.body);
  for (const char* text : {"sm_90a", "gfx90a"}) {
    absl::StatusOr<ProgramBuild> a = make_build(here, target(text)), b = make_build(there, target(text));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->build.source, b->build.source) << text;  // the key hashes the source, never origins
    EXPECT_THAT(a->build.source, Not(HasSubstr("program_build_test.cpp")));
    ASSERT_FALSE(a->build.origins.empty());
    EXPECT_EQ(a->build.origins.front().loc.line + 7, b->build.origins.front().loc.line);
    EXPECT_THAT(b->build.origins.front().loc.file, StartsWith("/elsewhere/checkout/"));
  }
}

TEST(MakeBuild, FillsTheBuildFromTheLowering) {
  absl::StatusOr<ProgramBuild> made = make_build(vector_add(), target("gfx90a"));
  ASSERT_TRUE(made.ok()) << made.status();
  const Build& build = made->build;
  EXPECT_EQ(build.name, "vector_add");
  EXPECT_EQ(build.kernel_name, "vector_add");
  EXPECT_THAT(build.source, HasSubstr("vector_add("));
  EXPECT_EQ(build.target.str(), "gfx90a");
  EXPECT_EQ(build.generator_version, std::string(dsl::lower::kLoweringVersion));
  EXPECT_EQ(build.launch.block_x, 2 * 64);  // num_warps wavefronts of gfx90a's 64 lanes
  EXPECT_EQ(build.launch.block_y, 1);
  EXPECT_EQ(build.launch.dynamic_shared_memory, 0);
  EXPECT_FALSE(build.policy.allow_spills);
  EXPECT_FALSE(build.policy.allow_scratch);
  ASSERT_EQ(made->params.size(), 3u);
  EXPECT_EQ(made->params[0].name, "x");
  EXPECT_TRUE(made->params[0].type.pointer);
  EXPECT_EQ(made->params[2].type.scalar, dsl::ScalarType::kI32);
}

TEST(MakeBuild, UsesTheTargetsWarpSize) {
  absl::StatusOr<ProgramBuild> made = make_build(vector_add(), target("sm_90a"));
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(made->build.launch.block_x, 2 * 32);
}

TEST(MakeBuild, PassesOptionsAndPolicyThrough) {
  ProgramBuildOptions options;
  options.policy.allow_scratch = true;
  options.options = {"-DMONOTILE_TEST=1"};
  absl::StatusOr<ProgramBuild> made = make_build(vector_add(), target("sm_90a"), options);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_TRUE(made->build.policy.allow_scratch);
  EXPECT_EQ(made->build.options, std::vector<std::string>{"-DMONOTILE_TEST=1"});
}

// MONOTILE_LINE_INFO set for the scope's life, unset after it.
class LineInfoRequested {
 public:
  LineInfoRequested() { ::setenv("MONOTILE_LINE_INFO", "1", 1); }
  ~LineInfoRequested() { ::unsetenv("MONOTILE_LINE_INFO"); }
};

TEST(MakeBuild, LineInfoPointsTheSourceAndTheLineTableAtTheUsersLines) {
  for (const char* text : {"sm_90a", "gfx90a"}) {
    const std::string table =
        target(text).vendor() == dsl::Vendor::kNvidia ? "-lineinfo" : "-gline-tables-only";
    absl::StatusOr<ProgramBuild> plain = make_build(vector_add(), target(text));
    ASSERT_TRUE(plain.ok()) << plain.status();
    EXPECT_THAT(plain->build.source, Not(HasSubstr("#line")));
    EXPECT_THAT(plain->build.options, Not(::testing::Contains(table)));
    LineInfoRequested requested;
    absl::StatusOr<ProgramBuild> lined = make_build(vector_add(), target(text));
    ASSERT_TRUE(lined.ok()) << lined.status();
    EXPECT_THAT(lined->build.source, HasSubstr("program_build_test.cpp\""));
    EXPECT_THAT(lined->build.options, ::testing::Contains(table)) << text;
  }
}

// The compilers take the flag, and their code objects then carry a line table for the profilers.
TEST(MakeBuild, LineInfoBuildsCompileWithALineTable) {
  for (const char* text : {"sm_90a", "gfx90a"}) {
    if (std::optional<std::string> missing = testing::missing_compiler(text)) {
      std::printf("[  SKIPPED ] %s: %s\n", text, missing->c_str());
      continue;
    }
    testing::TempDir dir;
    Jit jit(testing::config_in(dir.path()));
    absl::StatusOr<ProgramBuild> plain = make_build(vector_add(), target(text));
    ASSERT_TRUE(plain.ok()) << plain.status();
    absl::StatusOr<CompiledBuild> without = jit.compile_build(plain->build);
    ASSERT_TRUE(without.ok()) << without.status();
    EXPECT_THAT(without->code_object, Not(HasSubstr(".debug_line"))) << text;
    LineInfoRequested requested;
    absl::StatusOr<ProgramBuild> lined = make_build(vector_add(), target(text));
    ASSERT_TRUE(lined.ok()) << lined.status();
    absl::StatusOr<CompiledBuild> with = jit.compile_build(lined->build);
    ASSERT_TRUE(with.ok()) << with.status();
    EXPECT_THAT(with->code_object, HasSubstr(".debug_line")) << text;
    EXPECT_NE(with->key, without->key);
  }
}

TEST(MakeBuild, ErrorNamesTheProgramAndTarget) {
  absl::StatusOr<ProgramBuild> made = make_build(vector_add(), dsl::Target::cpu());
  ASSERT_FALSE(made.ok());
  EXPECT_EQ(made.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(made.status().message()), StartsWith("make_build of \"vector_add\" for cpu: "));
  EXPECT_THAT(std::string(made.status().message()), HasSubstr("the cpu target has no generated code"));
}

}  // namespace
}  // namespace monotile::jit
