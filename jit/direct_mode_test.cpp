// Direct mode: a warm start lowers and compiles nothing, and any direct entry that cannot be
// trusted (corrupt, malformed, of another lowering) is a miss that lowers, never a wrong kernel.
// The cache is made warm by pretend_compiled, so no compiler needs to be installed.
#include "jit/direct_mode.h"

#include <fstream>
#include <functional>
#include <vector>

#include "cache/layout.h"
#include "dsl/lower/lowering_identity.h"
#include "dsl/test_programs.h"
#include "gtest/gtest.h"
#include "jit/compile_programs.h"
#include "jit/test_support.h"

namespace monotile::jit {
namespace {

using dsl::testing::gemv;
using dsl::testing::rms_norm;

const dsl::Target& sm90() {
  static const dsl::Target target = *dsl::Target::parse("sm_90a");
  return target;
}

// `program` waiting for its grid dependency first: its launch info says so, direct or lowered.
dsl::Program waiting(dsl::Program program) {
  dsl::Op wait;
  wait.code = dsl::OpCode::kWaitGridDependency;
  program.body.ops.insert(program.body.ops.begin(), wait);
  return program;
}

std::vector<std::function<dsl::Program()>> programs() {
  return {[] { return rms_norm(256, 1e-6f); },
          [] { return waiting(gemv(4, 256, 512, 32, 64, 1)); }};
}

// A cache under `dir` holding every program's compiled build, as a GPU machine's would after a
// first start without direct mode.
void make_warm(const std::filesystem::path& dir) {
  Jit jit(testing::config_in(dir));
  std::vector<Build> builds;
  for (const auto& program : programs()) builds.push_back(make_build(program(), sm90())->build);
  testing::pretend_compiled(jit, sm90(), builds);
}

CompiledPrograms start(const std::filesystem::path& dir, const CompilePrograms& options = {}) {
  Jit jit(testing::config_in(dir));  // a fresh process's
  return compile_programs(jit, programs(), sm90(), options);
}

CompilePrograms with_identity(std::optional<std::string> identity) {
  CompilePrograms options;
  options.lowering_identity = std::move(identity);
  return options;
}

// Every program's result, as lowering would make it.
void expect_as_lowered(const CompiledPrograms& started) {
  ASSERT_EQ(started.results.size(), programs().size());
  for (size_t i = 0; i < started.results.size(); ++i) {
    ASSERT_TRUE(started.results[i].ok()) << started.results[i].status();
    const ProgramBuild made = *make_build(programs()[i](), sm90());
    const CompiledProgram& got = *started.results[i];
    EXPECT_EQ(got.compiled.key, build_key(made.build, "pretend-compiler 1").key());
    EXPECT_EQ(got.compiled.name, made.build.name);
    EXPECT_EQ(got.compiled.kernel_name, made.build.kernel_name);
    EXPECT_EQ(got.compiled.launch.block_x, made.build.launch.block_x);
    EXPECT_EQ(got.compiled.launch.dynamic_shared_memory, made.build.launch.dynamic_shared_memory);
    EXPECT_EQ(got.compiled.launch.programmatic_dependency, i == 1);
    EXPECT_EQ(got.params, made.params);
  }
}

// A start over the warm cache: `direct` programs found by direct mode, `lowered` lowered, none
// compiled, every result as lowering would make it.
void expect_start(const CompiledPrograms& started, size_t direct, size_t lowered) {
  EXPECT_EQ(started.direct, direct);
  EXPECT_EQ(started.lowered, lowered);
  EXPECT_EQ(started.compiled, 0u);
  expect_as_lowered(started);
}

std::filesystem::path direct_entry_file(const std::filesystem::path& dir, size_t program) {
  Jit jit(testing::config_in(dir));
  const std::optional<cache::KeyBuilder> key =
      direct_key(jit, programs()[program](), sm90(), {}, dsl::lower::lowering_identity());
  return cache::Layout(dir / "cache").entry_path(key->key());
}

TEST(LoweringIdentity, IsKnownAndStable) {
  const std::optional<std::string>& identity = dsl::lower::lowering_identity();
  ASSERT_TRUE(identity.has_value()) << "the image holding the lowering could not be read back";
  EXPECT_EQ(identity->size(), 32u);
  EXPECT_EQ(*identity, *dsl::lower::lowering_identity());
}

TEST(DirectMode, WarmStartLowersAndCompilesNothing) {
  testing::TempDir dir;
  make_warm(dir.path());
  expect_start(start(dir.path()), 0u, 2u);  // lowered, found in the cache, given direct entries
  expect_start(start(dir.path()), 2u, 0u);
}

TEST(DirectMode, CorruptEntryFallsBackToLowering) {
  testing::TempDir dir;
  make_warm(dir.path());
  start(dir.path());
  const std::filesystem::path file = direct_entry_file(dir.path(), 0);
  ASSERT_TRUE(std::filesystem::exists(file));
  {
    std::fstream bytes(file, std::ios::in | std::ios::out | std::ios::binary);
    bytes.seekp(static_cast<std::streamoff>(std::filesystem::file_size(file) / 2));
    bytes.put('\x5a');
    bytes.put('\xa5');
  }
  expect_start(start(dir.path()), 1u, 1u);
  // Lowering wrote the entry again.
  EXPECT_EQ(start(dir.path()).direct, 2u);
}

TEST(DirectMode, MissingOrMalformedEntryFallsBackToLowering) {
  testing::TempDir dir;
  make_warm(dir.path());
  start(dir.path());
  ASSERT_TRUE(std::filesystem::remove(direct_entry_file(dir.path(), 0)));
  {
    // A well-formed entry whose fields do not parse.
    Jit jit(testing::config_in(dir.path()));
    const std::optional<cache::KeyBuilder> key =
        direct_key(jit, programs()[1](), sm90(), {}, dsl::lower::lowering_identity());
    std::optional<cache::Entry> entry = jit.cache().lookup(*key);
    ASSERT_TRUE(entry.has_value());
    entry->metadata["params"] = "7:short";
    std::filesystem::remove(direct_entry_file(dir.path(), 1));
    ASSERT_TRUE(jit.cache().store(*key, *entry).ok());
  }
  expect_start(start(dir.path()), 0u, 2u);
}

TEST(DirectMode, AnotherLoweringIdentityMisses) {
  testing::TempDir dir;
  make_warm(dir.path());
  start(dir.path(), with_identity("lowering A"));
  EXPECT_EQ(start(dir.path(), with_identity("lowering A")).direct, 2u);
  expect_start(start(dir.path(), with_identity("lowering B")), 0u, 2u);
}

TEST(DirectMode, OffWhenTurnedOffWithoutIdentityOrWhenDumping) {
  testing::TempDir dir;
  make_warm(dir.path());
  start(dir.path());
  EXPECT_EQ(start(dir.path(), with_identity(std::nullopt)).lowered, 2u);
  {
    JitConfig off = testing::config_in(dir.path());
    off.direct_mode = false;  // MONOTILE_JIT_DIRECT_MODE=0
    Jit jit(off);
    EXPECT_EQ(compile_programs(jit, programs(), sm90()).lowered, 2u);
  }
  CompilePrograms line_directives;
  line_directives.build.lower.line_directives = true;  // the source would carry the program's lines
  Jit jit(testing::config_in(dir.path()));
  EXPECT_FALSE(direct_key(jit, programs()[0](), sm90(), line_directives.build,
                          dsl::lower::lowering_identity())
                   .has_value());
  ::setenv("MONOTILE_LINE_INFO", "1", 1);  // the same, asked of every build
  const bool keyed =
      direct_key(jit, programs()[0](), sm90(), {}, dsl::lower::lowering_identity()).has_value();
  ::unsetenv("MONOTILE_LINE_INFO");
  EXPECT_FALSE(keyed);
  EXPECT_TRUE(
      direct_key(jit, programs()[0](), sm90(), {}, dsl::lower::lowering_identity()).has_value());
}

TEST(DirectMode, KeyFollowsTheProgramAndItsOptions) {
  testing::TempDir dir;
  make_warm(dir.path());
  Jit jit(testing::config_in(dir.path()));
  const std::string identity = "lowering A";
  const cache::Key a = direct_key(jit, rms_norm(256, 1e-6f), sm90(), {}, identity)->key();
  EXPECT_EQ(a, direct_key(jit, rms_norm(256, 1e-6f), sm90(), {}, identity)->key());
  EXPECT_NE(a, direct_key(jit, rms_norm(512, 1e-6f), sm90(), {}, identity)->key());
  EXPECT_NE(a, direct_key(jit, rms_norm(256, 1e-5f), sm90(), {}, identity)->key());
  ProgramBuildOptions aligned;
  aligned.lower.pointer_alignment = 256;
  EXPECT_NE(a, direct_key(jit, rms_norm(256, 1e-6f), sm90(), aligned, identity)->key());
  ProgramBuildOptions flagged;
  flagged.options = {"-lineinfo"};
  EXPECT_NE(a, direct_key(jit, rms_norm(256, 1e-6f), sm90(), flagged, identity)->key());
}

}  // namespace
}  // namespace monotile::jit
