// compile_build and compile_all through a real cache: keys, hits, deduplication, progress, failures
// that do not stop the others, and a second compile_all that is all hits and compiles nothing.
#include "jit/jit.h"

#include <atomic>
#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/build_key.h"
#include "jit/compile_all.h"
#include "jit/test_support.h"
#include "tests/jit_fixtures/samples.h"

namespace monotile::jit {
namespace {

using ::testing::HasSubstr;

std::vector<Build> samples_for(std::initializer_list<const char*> targets) {
  std::vector<Build> builds;
  for (const char* text : targets) {
    std::vector<Build> found = monotile::testing::samples::sample_builds(*dsl::Target::parse(text));
    builds.insert(builds.end(), found.begin(), found.end());
  }
  return builds;
}

TEST(BuildKey, IgnoresNameLaunchAndOptionOrderButNotSourceOrTarget) {
  Build a("one", "k", "source", *dsl::Target::parse("gfx90a"));
  a.options = {"-DA=1", "-DB=2"};
  Build b = a;
  b.name = "two";
  b.launch.block_x = 512;
  b.options = {"-DB=2", "-DA=1"};
  EXPECT_EQ(build_key(a, "c").key(), build_key(b, "c").key());
  Build c = a;
  c.source = "source ";
  EXPECT_NE(build_key(a, "c").key(), build_key(c, "c").key());
  Build d("one", "k", "source", *dsl::Target::parse("gfx90a:xnack-"));
  d.options = a.options;
  EXPECT_NE(build_key(a, "c").key(), build_key(d, "c").key());
  EXPECT_NE(build_key(a, "c").key(), build_key(a, "c2").key());
}

TEST(CompileBuild, SecondCallIsAHit) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  testing::TempDir dir;
  Jit jit(testing::config_in(dir.path()));
  Build build = monotile::testing::samples::sample_builds(*dsl::Target::parse("sm_90a")).front();
  absl::StatusOr<CompiledBuild> cold = jit.compile_build(build);
  ASSERT_TRUE(cold.ok()) << cold.status();
  EXPECT_FALSE(cold->hit);
  absl::StatusOr<CompiledBuild> warm = jit.compile_build(build);
  ASSERT_TRUE(warm.ok()) << warm.status();
  EXPECT_TRUE(warm->hit);
  EXPECT_EQ(warm->code_object, cold->code_object);
  EXPECT_EQ(warm->report, cold->report);
  EXPECT_EQ(warm->key, cold->key);
}

TEST(CompileBuild, DumpDirReceivesSourcePtxLogAndReport) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  testing::TempDir dir;
  JitConfig config = testing::config_in(dir.path());
  config.dump_dir = dir.path() / "dump";
  Jit jit(config);
  Build build = monotile::testing::samples::sample_builds(*dsl::Target::parse("sm_90a")).front();
  ASSERT_TRUE(jit.compile_build(build).ok());
  for (const char* suffix : {".cu", ".ptx", ".log", ".report"}) {
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "dump" / (build.name + "-sm_90a" + suffix))) << suffix;
  }
}

TEST(CompileAll, DeduplicatesReportsProgressAndSecondRunCompilesNothing) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  MT_SKIP_WITHOUT_COMPILER("gfx90a");
  testing::TempDir dir;
  std::vector<Build> builds = samples_for({"sm_90a", "gfx90a"});
  Build duplicate = builds[0];
  duplicate.name = "vector_add_again";
  builds.push_back(duplicate);

  std::atomic<size_t> calls{0};
  CompileAllOptions options;
  options.jobs = 2;
  options.on_progress = [&](const CompileProgress& progress) {
    ++calls;
    EXPECT_EQ(progress.total, builds.size() - 1);
    EXPECT_TRUE(progress.status->ok()) << *progress.status;
  };
  {
    Jit jit(testing::config_in(dir.path()));
    CompileAllResult cold = compile_all(jit, builds, options);
    EXPECT_TRUE(cold.ok());
    EXPECT_EQ(cold.unique, builds.size() - 1);
    EXPECT_EQ(cold.misses, cold.unique);
    EXPECT_EQ(calls.load(), cold.unique);
    ASSERT_TRUE(cold.results.back().ok());
    EXPECT_EQ(cold.results.back()->name, "vector_add_again");
    EXPECT_EQ(cold.results.back()->code_object, cold.results[0]->code_object);
  }
  // A fresh Jit (as a restarted worker has) on the same cache.
  Jit jit(testing::config_in(dir.path()));
  CompileAllResult warm = compile_all(jit, builds, options);
  EXPECT_TRUE(warm.ok());
  EXPECT_EQ(warm.hits, warm.unique);
  EXPECT_EQ(warm.misses, 0u);
  EXPECT_EQ(jit.cache().process_stats().stores, 0u);
  for (const auto& result : warm.results) {
    ASSERT_TRUE(result.ok());
    EXPECT_TRUE(result->hit);
  }
}

TEST(CompileAll, FailureDoesNotStopTheOthers) {
  MT_SKIP_WITHOUT_COMPILER("sm_90a");
  testing::TempDir dir;
  Jit jit(testing::config_in(dir.path()));
  std::vector<Build> builds = samples_for({"sm_90a"});
  builds.insert(builds.begin(), Build("broken", "mt_broken", "this is not C++", *dsl::Target::parse("sm_90a")));
  builds.push_back(Build("unbuildable", "k", "", *dsl::Target::parse("gfx942")));
  CompileAllOptions options;
  options.jobs = 2;
  CompileAllResult result = compile_all(jit, builds, options);
  EXPECT_EQ(result.failures, 2u);
  EXPECT_FALSE(result.ok());
  EXPECT_THAT(std::string(result.results.front().status().message()), HasSubstr("\"broken\" for sm_90a"));
  EXPECT_THAT(std::string(result.results.back().status().message()), HasSubstr("build \"unbuildable\""));
  for (size_t i = 1; i + 1 < builds.size(); ++i) EXPECT_TRUE(result.results[i].ok()) << result.results[i].status();
}

}  // namespace
}  // namespace monotile::jit
