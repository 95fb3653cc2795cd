// Config::from_environment: defaults, each variable, and the warning for a malformed value.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "cache/cache.h"

namespace monotile::cache {
namespace {

using ::testing::HasSubstr;

// Clears the cache's variables for one test and restores nothing: each test sets what it needs.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"MONOTILE_CACHE_DIR", "MONOTILE_CACHE_READONLY_DIRS", "MONOTILE_CACHE_MAX_SIZE",
                             "MONOTILE_CACHE_DISABLE", "MONOTILE_CACHE_WAIT_TIMEOUT", "XDG_CACHE_HOME"}) {
      unsetenv(name);
    }
    setenv("HOME", "/home/tester", 1);
  }
};

TEST_F(ConfigTest, DefaultsToHomeCacheWithEightGiB) {
  Config config = Config::from_environment();
  EXPECT_EQ(config.writable_dir, "/home/tester/.cache/monotile");
  EXPECT_TRUE(config.read_only_dirs.empty());
  EXPECT_EQ(config.max_bytes, 8ull << 30);
  EXPECT_TRUE(config.enabled);
}

TEST_F(ConfigTest, UsesAbsoluteXdgCacheHomeOnly) {
  setenv("XDG_CACHE_HOME", "/var/cache/u", 1);
  EXPECT_EQ(Config::from_environment().writable_dir, "/var/cache/u/monotile");
  setenv("XDG_CACHE_HOME", "relative/dir", 1);
  EXPECT_EQ(Config::from_environment().writable_dir, "/home/tester/.cache/monotile");
}

TEST_F(ConfigTest, ReadsEveryVariable) {
  setenv("MONOTILE_CACHE_DIR", "/scratch/kernels", 1);
  setenv("MONOTILE_CACHE_READONLY_DIRS", "/opt/bundle-a::/opt/bundle-b:", 1);
  setenv("MONOTILE_CACHE_MAX_SIZE", "500M", 1);
  setenv("MONOTILE_CACHE_DISABLE", "1", 1);
  setenv("MONOTILE_CACHE_WAIT_TIMEOUT", "2.5", 1);
  Config config = Config::from_environment();
  EXPECT_EQ(config.writable_dir, "/scratch/kernels");
  ASSERT_EQ(config.read_only_dirs.size(), 2u);
  EXPECT_EQ(config.read_only_dirs[0], "/opt/bundle-a");
  EXPECT_EQ(config.read_only_dirs[1], "/opt/bundle-b");
  EXPECT_EQ(config.max_bytes, 500ull << 20);
  EXPECT_FALSE(config.enabled);
  EXPECT_EQ(config.compile_wait_timeout, std::chrono::milliseconds(2500));
}

TEST_F(ConfigTest, EmptyDirMeansNoWritableLayer) {
  setenv("MONOTILE_CACHE_DIR", "", 1);
  EXPECT_TRUE(Config::from_environment().writable_dir.empty());
}

TEST_F(ConfigTest, DisableZeroKeepsTheCacheOn) {
  setenv("MONOTILE_CACHE_DISABLE", "0", 1);
  EXPECT_TRUE(Config::from_environment().enabled);
}

TEST_F(ConfigTest, MalformedSizeWarnsAndKeepsTheDefault) {
  setenv("MONOTILE_CACHE_MAX_SIZE", "lots", 1);
  ::testing::internal::CaptureStderr();
  Config config = Config::from_environment();
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(config.max_bytes, 8ull << 30);
  EXPECT_THAT(err, HasSubstr("ignoring MONOTILE_CACHE_MAX_SIZE=\"lots\": expected a size such as \"500M\""));
}

TEST_F(ConfigTest, MalformedDisableWarns) {
  setenv("MONOTILE_CACHE_DISABLE", "maybe", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(Config::from_environment().enabled);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("ignoring MONOTILE_CACHE_DISABLE=\"maybe\": expected 1 (or true, yes, on)"));
}

TEST_F(ConfigTest, MalformedWaitTimeoutWarns) {
  setenv("MONOTILE_CACHE_WAIT_TIMEOUT", "forever", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(Config::from_environment().compile_wait_timeout, std::chrono::minutes(5));
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("ignoring MONOTILE_CACHE_WAIT_TIMEOUT=\"forever\": expected a number of seconds"));
}

}  // namespace
}  // namespace monotile::cache
