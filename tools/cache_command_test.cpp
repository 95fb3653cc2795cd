// `monotile cache` end to end: the built binary run on a temporary cache directory filled
// through the library, checking its output, its effects and its exit status.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "cache/cache.h"
#include "cache/layout.h"
#include "cache/testing.h"
#include "support/files.h"
#include "tests/testing/command.h"

namespace monotile::tools {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using cache::testing::TempDir;

using CommandResult = monotile::testing::CommandResult;

class CacheCommandTest : public ::testing::Test {
 protected:
  std::filesystem::path dir() const { return temp_.path() / "cache"; }

  CommandResult run(const std::string& args) const {
    std::string command = "env -u MONOTILE_CACHE_READONLY_DIRS -u MONOTILE_CACHE_DISABLE -u MONOTILE_CACHE_MAX_SIZE "
                          "MONOTILE_CACHE_DIR='" + dir().string() + "' " MONOTILE_BINARY " cache " + args + " 2>&1";
    return monotile::testing::run_command(command);
  }

  // Fills the cache with two kernels, one looked up once (a hit) and one missed first.
  void fill() {
    cache::Config config;
    config.writable_dir = dir();
    auto store = cache::Cache::open(config);
    ASSERT_TRUE(store->store(cache::testing::key_for("a"), cache::testing::entry_of_size(2048, 'a', "moe_w16")).ok());
    ASSERT_FALSE(store->lookup(cache::testing::key_for("b")));
    ASSERT_TRUE(store->store(cache::testing::key_for("b"), cache::testing::entry_of_size(4096, 'b', "kda_verify_w8")).ok());
    // Stored an hour or two ago, so the hit on "a" marks it used now (hits touch at most once a minute).
    cache::testing::set_age(entry_path("a"), 7200);
    cache::testing::set_age(entry_path("b"), 3600);
    ASSERT_TRUE(store->lookup(cache::testing::key_for("a")));
  }

  std::filesystem::path entry_path(const std::string& name) const {
    return cache::Layout(dir()).entry_path(cache::testing::key_for(name).key());
  }

  TempDir temp_;
};

TEST_F(CacheCommandTest, DirPrintsTheDirectory) {
  CommandResult result = run("dir");
  EXPECT_EQ(result.status, 0);
  EXPECT_EQ(result.output, dir().string() + "\n");
  EXPECT_EQ(run("--dir /somewhere/else dir").output, "/somewhere/else\n");
}

TEST_F(CacheCommandTest, StatsShowsCountersOfEveryProcess) {
  fill();
  CommandResult result = run("stats");
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("cache directory   " + dir().string()));
  EXPECT_THAT(result.output, HasSubstr("entries           2\n"));
  EXPECT_THAT(result.output, HasSubstr("hits              1 (50.0% of 2 lookups)"));
  EXPECT_THAT(result.output, HasSubstr("misses            1\n"));
  EXPECT_THAT(result.output, HasSubstr("stores            2\n"));
  EXPECT_THAT(result.output, HasSubstr("of 8.0 GiB"));
  CommandResult zeroed = run("stats --zero");
  EXPECT_THAT(zeroed.output, HasSubstr("hits              0\n"));
  EXPECT_THAT(zeroed.output, HasSubstr("entries           2\n"));
}

TEST_F(CacheCommandTest, ListShowsKeySizeAgeTargetAndKernel) {
  fill();
  CommandResult result = run("list");
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("KEY"));
  EXPECT_THAT(result.output, HasSubstr(cache::testing::key_for("a").key().hex()));
  EXPECT_THAT(result.output, HasSubstr("sm_90a"));
  EXPECT_THAT(result.output, HasSubstr("moe_w16"));
  EXPECT_THAT(result.output, HasSubstr("kda_verify_w8"));
  EXPECT_THAT(result.output, HasSubstr("2 entries, "));
  // Most recently used first: "a" was looked up after "b" was stored.
  EXPECT_LT(result.output.find("moe_w16"), result.output.find("kda_verify_w8"));
}

TEST_F(CacheCommandTest, VerifyExitStatusSaysWhetherAnyEntryIsBad) {
  fill();
  CommandResult clean = run("verify");
  EXPECT_EQ(clean.status, 0) << clean.output;
  EXPECT_THAT(clean.output, HasSubstr("checked 2 entries: 0 bad"));

  std::string bytes = read_file(entry_path("b")).value();
  bytes[200] ^= 0x01;
  ASSERT_TRUE(write_file(entry_path("b"), bytes).ok());
  CommandResult found = run("verify");
  EXPECT_EQ(found.status, 1);
  EXPECT_THAT(found.output, HasSubstr("bad entry " + cache::testing::key_for("b").key().hex() + " \"" +
                                      entry_path("b").string() + "\": checksum mismatch"));
  EXPECT_THAT(found.output, HasSubstr("checked 2 entries: 1 bad (run `monotile cache verify --remove` to delete them)"));
  EXPECT_TRUE(std::filesystem::exists(entry_path("b")));  // verify alone changes nothing

  CommandResult removed = run("verify --remove");
  EXPECT_EQ(removed.status, 1);
  EXPECT_THAT(removed.output, HasSubstr("1 bad, 1 removed"));
  EXPECT_FALSE(std::filesystem::exists(entry_path("b")));
  EXPECT_EQ(run("verify").status, 0);
  EXPECT_THAT(run("stats").output, HasSubstr("corrupt removed   1\n"));
}

TEST_F(CacheCommandTest, ListMarksABadEntry) {
  fill();
  ASSERT_TRUE(write_file(entry_path("a"), "garbage").ok());
  EXPECT_THAT(run("list").output, HasSubstr("(bad: truncated: 7 bytes"));
}

TEST_F(CacheCommandTest, PruneBySizeKeepsTheMostRecentlyUsed) {
  fill();
  CommandResult result = run("prune --max-size 3K");
  EXPECT_EQ(result.status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("removed 1 entries"));
  EXPECT_TRUE(std::filesystem::exists(entry_path("a")));
  EXPECT_FALSE(std::filesystem::exists(entry_path("b")));
  EXPECT_THAT(run("stats").output, HasSubstr("evictions         1\n"));
}

TEST_F(CacheCommandTest, PruneByAge) {
  fill();
  cache::testing::set_age(entry_path("b"), 3 * 86400);
  CommandResult result = run("prune --max-age 2d");
  EXPECT_THAT(result.output, HasSubstr("removed 1 entries"));
  EXPECT_FALSE(std::filesystem::exists(entry_path("b")));
  EXPECT_TRUE(std::filesystem::exists(entry_path("a")));
}

TEST_F(CacheCommandTest, ClearRemovesEveryEntry) {
  fill();
  CommandResult result = run("clear");
  EXPECT_EQ(result.status, 0);
  EXPECT_THAT(result.output, HasSubstr("removed 2 entries"));
  EXPECT_THAT(run("list").output, HasSubstr("0 entries, 0 B"));
  EXPECT_THAT(run("stats").output, HasSubstr("entries           0\n"));
}

TEST_F(CacheCommandTest, ListAndVerifyOnABundleWriteNothing) {
  fill();
  std::filesystem::remove_all(dir() / "stats");
  CommandResult result = run("--dir '" + dir().string() + "' verify");
  EXPECT_EQ(result.status, 0) << result.output;
  run("--dir '" + dir().string() + "' list");
  EXPECT_FALSE(std::filesystem::exists(dir() / "stats"));
}

TEST_F(CacheCommandTest, UsageErrorsSayWhatIsWrong) {
  CommandResult unknown = run("frobnicate");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_THAT(unknown.output,
              HasSubstr("monotile cache: unknown command \"frobnicate\"; expected stats, list, verify, prune, clear or dir"));
  CommandResult size = run("prune --max-size 12X");
  EXPECT_EQ(size.status, 2);
  EXPECT_THAT(size.output, HasSubstr("monotile cache prune: invalid --max-size \"12X\": expected a size such as \"500M\""));
  CommandResult age = run("prune --max-age soon");
  EXPECT_THAT(age.output, HasSubstr("monotile cache prune: invalid --max-age \"soon\": expected a duration such as"));
  CommandResult missing = run("--dir");
  EXPECT_EQ(missing.status, 2);
  EXPECT_THAT(missing.output, HasSubstr("monotile cache: --dir needs a value; hint: monotile cache --help lists its options"));
  EXPECT_THAT(run("").output, HasSubstr("monotile cache: missing command"));
  CommandResult two = run("list verify");
  EXPECT_EQ(two.status, 2);
  EXPECT_THAT(two.output, HasSubstr("monotile cache: one command expected, got \"list\" and \"verify\""));
  EXPECT_THAT(run("--help").output, Not(HasSubstr("unknown")));
}

TEST_F(CacheCommandTest, RefusesAnOptionOfAnotherCommandOrNone) {
  CommandResult unknown = run("verify --bogus");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_THAT(unknown.output,
              HasSubstr("monotile cache: unknown option --bogus; hint: monotile cache --help lists its options"));
  CommandResult other = run("list --zero");
  EXPECT_EQ(other.status, 2);
  EXPECT_THAT(other.output, HasSubstr("monotile cache list: --zero is an option of stats, not of list; hint: monotile "
                                      "cache --help lists each command's options"));
  // Another subcommand's options are not this one's.
  CommandResult decode = run("list --steps 3");
  EXPECT_EQ(decode.status, 2);
  EXPECT_THAT(decode.output, HasSubstr("monotile cache: unknown option --steps; hint:"));
}

TEST_F(CacheCommandTest, BooleansTakeAbseilsForms) {
  EXPECT_EQ(run("--dir=" + dir().string() + " verify --remove=false").status, 0);
  EXPECT_EQ(run("verify --noremove").status, 0);
  CommandResult valued = run("verify --no-remove=yes");
  EXPECT_EQ(valued.status, 2);
  EXPECT_THAT(valued.output, HasSubstr("monotile cache: --no-remove takes no value, got \"yes\""));
  CommandResult bad = run("verify --remove=maybe");
  EXPECT_EQ(bad.status, 2);
  EXPECT_THAT(bad.output, HasSubstr("monotile cache: --remove=maybe: expected true or false"));
}

TEST(CacheCommand, EmptyCacheDirSaysSo) {
  CommandResult result = monotile::testing::run_command("env MONOTILE_CACHE_DIR= " MONOTILE_BINARY " cache list 2>&1");
  EXPECT_THAT(result.output, HasSubstr("monotile cache: no cache directory (MONOTILE_CACHE_DIR is set but empty); "
                                       "hint: pass --dir DIR"));
  EXPECT_EQ(result.status, 1);
}

}  // namespace
}  // namespace monotile::tools
