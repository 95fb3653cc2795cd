// The cache through its API: hits and misses, persistence across instances, read-only layers,
// degradation when the directory cannot be written, the disable switch, stale-file sweep.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "cache/cache.h"
#include "cache/eviction.h"
#include "cache/layout.h"
#include "cache/test_hooks.h"
#include "cache/testing.h"
#include "support/files.h"

namespace monotile::cache {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

Config config_in(const std::filesystem::path& dir) {
  Config config;
  config.writable_dir = dir;
  return config;
}

// Every file below `root` with its size and modification time, to prove nothing was written.
std::map<std::string, std::pair<uintmax_t, long long>> snapshot(const std::filesystem::path& root) {
  std::map<std::string, std::pair<uintmax_t, long long>> files;
  for (const auto& item : std::filesystem::recursive_directory_iterator(root)) {
    struct stat info;
    lstat(item.path().c_str(), &info);
    files[item.path().string()] = {item.is_regular_file() ? item.file_size() : 0,
                                   info.st_mtim.tv_sec * 1000000000LL + info.st_mtim.tv_nsec};
  }
  return files;
}

TEST(Cache, MissThenStoreThenHit) {
  TempDir dir;
  auto cache = Cache::open(config_in(dir.path()));
  ASSERT_TRUE(cache->writable());
  KeyBuilder key = testing::key_for("k");
  EXPECT_FALSE(cache->lookup(key));
  Entry entry = testing::entry_of_size(4096);
  ASSERT_TRUE(cache->store(key, entry).ok());
  std::optional<Entry> found = cache->lookup(key);
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, entry);
  Stats stats = cache->stats();
  EXPECT_EQ(stats.hits, 1u);
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.stores, 1u);
  EXPECT_EQ(stats.entries, 1u);
  EXPECT_EQ(stats.bytes, std::filesystem::file_size(Layout(dir.path()).entry_path(key.key())));
}

TEST(Cache, ASecondInstanceComputesNothing) {
  TempDir dir;
  int computes = 0;
  auto compute = [&]() -> absl::StatusOr<Entry> {
    ++computes;
    return testing::entry_of_size(100);
  };
  {
    auto first = Cache::open(config_in(dir.path()));
    bool hit = true;
    ASSERT_TRUE(first->get_or_compute(testing::key_for("k"), compute, &hit).ok());
    EXPECT_FALSE(hit);
  }
  auto second = Cache::open(config_in(dir.path()));
  bool hit = false;
  auto entry = second->get_or_compute(testing::key_for("k"), compute, &hit);
  ASSERT_TRUE(entry.ok());
  EXPECT_TRUE(hit);
  EXPECT_EQ(computes, 1);
  EXPECT_EQ(second->process_stats().hits, 1u);
  EXPECT_EQ(second->process_stats().misses, 0u);
  EXPECT_EQ(second->stats().misses, 1u);  // persisted by the first instance
  EXPECT_EQ(second->stats().hits, 1u);
}

TEST(Cache, FailedComputeIsReturnedAndStoresNothing) {
  TempDir dir;
  auto cache = Cache::open(config_in(dir.path()));
  auto result = cache->get_or_compute(testing::key_for("bad"),
                                      [] { return absl::StatusOr<Entry>(absl::InternalError("nvrtc failed")); });
  EXPECT_EQ(result.status().message(), "nvrtc failed");
  EXPECT_FALSE(cache->lookup(testing::key_for("bad")));
  EXPECT_EQ(cache->stats().stores, 0u);
}

TEST(Cache, DifferentKeysDoNotMix) {
  TempDir dir;
  auto cache = Cache::open(config_in(dir.path()));
  ASSERT_TRUE(cache->store(testing::key_for("a"), testing::entry_of_size(10, 'a')).ok());
  ASSERT_TRUE(cache->store(testing::key_for("b"), testing::entry_of_size(10, 'b')).ok());
  EXPECT_EQ(cache->lookup(testing::key_for("a"))->code_object, testing::entry_of_size(10, 'a').code_object);
  EXPECT_EQ(cache->lookup(testing::key_for("b"))->code_object, testing::entry_of_size(10, 'b').code_object);
}

TEST(Cache, StoringAnExistingKeyKeepsTheFirst) {
  TempDir dir;
  auto cache = Cache::open(config_in(dir.path()));
  ASSERT_TRUE(cache->store(testing::key_for("k"), testing::entry_of_size(10, 'a')).ok());
  ASSERT_TRUE(cache->store(testing::key_for("k"), testing::entry_of_size(10, 'b')).ok());
  EXPECT_EQ(cache->lookup(testing::key_for("k"))->code_object, testing::entry_of_size(10, 'a').code_object);
  EXPECT_EQ(cache->stats().stores, 1u);
  EXPECT_TRUE(std::filesystem::is_empty(Layout(dir.path()).staging_dir()));
}

TEST(Cache, ReadOnlyLayersServeHitsAndAreNeverWritten) {
  TempDir bundle, work;
  {
    auto producer = Cache::open(config_in(bundle.path()));
    ASSERT_TRUE(producer->store(testing::key_for("shipped"), testing::entry_of_size(500)).ok());
    ASSERT_TRUE(producer->store(testing::key_for("damaged"), testing::entry_of_size(500)).ok());
  }
  std::filesystem::path damaged = Layout(bundle.path()).entry_path(testing::key_for("damaged").key());
  std::string bytes = read_file(damaged).value();
  bytes[100] ^= 1;
  ASSERT_TRUE(write_file(damaged, bytes).ok());
  auto before = snapshot(bundle.path());

  Config config = config_in(work.path());
  config.read_only_dirs = {bundle.path()};
  auto cache = Cache::open(config);
  EXPECT_TRUE(cache->lookup(testing::key_for("shipped")));
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache->lookup(testing::key_for("damaged")));
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("checksum mismatch: stored "));
  EXPECT_TRUE(cache->get_or_compute(testing::key_for("new"), [] { return absl::StatusOr<Entry>(Entry{}); }).ok());
  EXPECT_TRUE(cache->get_or_compute(testing::key_for("damaged"), [] { return absl::StatusOr<Entry>(Entry{}); }).ok());
  EXPECT_EQ(snapshot(bundle.path()), before);
  // The rebuilt entry went to the writable layer.
  EXPECT_TRUE(std::filesystem::exists(Layout(work.path()).entry_path(testing::key_for("damaged").key())));
}

TEST(Cache, ReadOnlyOnlyCacheServesHitsAndRefusesStores) {
  TempDir bundle;
  ASSERT_TRUE(Cache::open(config_in(bundle.path()))->store(testing::key_for("k"), Entry{}).ok());
  Config config;
  config.read_only_dirs = {bundle.path()};
  auto cache = Cache::open(config);
  EXPECT_FALSE(cache->writable());
  EXPECT_TRUE(cache->lookup(testing::key_for("k")));
  absl::Status status = cache->store(testing::key_for("other"), Entry{});
  EXPECT_TRUE(absl::IsFailedPrecondition(status));
  EXPECT_THAT(std::string(status.message()), HasSubstr("kernel cache has no writable directory"));
}

TEST(Cache, UnwritableDirectoryDegradesWithOneWarning) {
  TempDir dir;
  ASSERT_TRUE(write_file(dir / "a-file", "not a directory").ok());
  Config config = config_in(dir / "a-file" / "cache");
  ::testing::internal::CaptureStderr();
  auto cache = Cache::open(config);
  auto again = Cache::open(config);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(cache->writable());
  EXPECT_THAT(err, HasSubstr("kernel cache directory \"" + (dir / "a-file" / "cache").string() +
                             "\" cannot be written ("));
  EXPECT_THAT(err, HasSubstr("kernels will be compiled without caching; hint: set MONOTILE_CACHE_DIR"));
  EXPECT_EQ(err.find("cannot be written"), err.rfind("cannot be written"));  // once
  int computes = 0;
  for (int i = 0; i < 2; ++i) {
    auto entry = cache->get_or_compute(testing::key_for("k"), [&] {
      ++computes;
      return absl::StatusOr<Entry>(testing::entry_of_size(10));
    });
    ASSERT_TRUE(entry.ok());
    EXPECT_EQ(*entry, testing::entry_of_size(10));
  }
  EXPECT_EQ(computes, 2);
  EXPECT_EQ(cache->process_stats().misses, 2u);
}

TEST(Cache, PermissionDeniedDirectoryDegrades) {
  if (geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  TempDir dir;
  std::filesystem::permissions(dir.path(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  auto cache = Cache::open(config_in(dir / "cache"));
  EXPECT_FALSE(cache->writable());
  EXPECT_TRUE(cache->get_or_compute(testing::key_for("k"), [] { return absl::StatusOr<Entry>(Entry{}); }).ok());
}

TEST(Cache, DisabledCacheComputesEveryTimeAndTouchesNothing) {
  TempDir dir;
  Config config = config_in(dir / "cache");
  config.enabled = false;
  auto cache = Cache::open(config);
  EXPECT_FALSE(cache->writable());
  int computes = 0;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(cache->get_or_compute(testing::key_for("k"), [&] {
      ++computes;
      return absl::StatusOr<Entry>(Entry{});
    }).ok());
  }
  EXPECT_EQ(computes, 2);
  EXPECT_FALSE(std::filesystem::exists(dir / "cache"));
  EXPECT_THAT(std::string(cache->store(testing::key_for("k"), Entry{}).message()), HasSubstr("kernel cache is disabled"));
}

TEST(Cache, MissingReadOnlyDirectoryIsSkippedWithAWarning) {
  TempDir dir;
  Config config = config_in(dir / "cache");
  config.read_only_dirs = {dir / "no-such-bundle"};
  ::testing::internal::CaptureStderr();
  auto cache = Cache::open(config);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("read-only cache directory \"" + (dir / "no-such-bundle").string() +
                        "\" does not exist or is not a directory; skipping it"));
  EXPECT_TRUE(cache->writable());
}

TEST(Cache, OpenSweepsStaleStagingFilesOnly) {
  TempDir dir;
  Cache::open(config_in(dir.path()));
  Layout layout(dir.path());
  ASSERT_TRUE(write_file(layout.staging_dir() / "old.1.abc.tmp", "half an entry").ok());
  ASSERT_TRUE(write_file(layout.staging_dir() / "young.2.abc.tmp", "being written").ok());
  ASSERT_TRUE(write_file(layout.locks_dir() / "old.lock", "123\n").ok());
  testing::set_age(layout.staging_dir() / "old.1.abc.tmp", 2 * 3600);
  testing::set_age(layout.locks_dir() / "old.lock", 2 * 3600);
  Cache::open(config_in(dir.path()));
  EXPECT_FALSE(std::filesystem::exists(layout.staging_dir() / "old.1.abc.tmp"));
  EXPECT_FALSE(std::filesystem::exists(layout.locks_dir() / "old.lock"));
  EXPECT_TRUE(std::filesystem::exists(layout.staging_dir() / "young.2.abc.tmp"));
}

TEST(Cache, RecreatesADirectoryRemovedUnderIt) {
  TempDir dir;
  auto cache = Cache::open(config_in(dir / "cache"));
  std::filesystem::remove_all(dir / "cache");
  EXPECT_TRUE(cache->store(testing::key_for("k"), Entry{}).ok());
  EXPECT_TRUE(cache->lookup(testing::key_for("k")));
}

TEST(Cache, MarksItsDirectoryForBackupTools) {
  TempDir dir;
  Cache::open(config_in(dir.path()));
  EXPECT_THAT(read_file(dir / "CACHEDIR.TAG").value(), HasSubstr("Signature: 8a477f597d28d172789f06886806bc55"));
}

TEST(CacheFailures, FullDiskDegradesWithOneWarningAndStillCompiles) {
  TempDir dir;
  auto cache = Cache::open(config_in(dir.path()));
  ASSERT_TRUE(cache->writable());
  test_hooks().publish_errno = ENOSPC;
  ::testing::internal::CaptureStderr();
  int computes = 0;
  for (const char* name : {"a", "b"}) {
    auto entry = cache->get_or_compute(testing::key_for(name), [&] {
      ++computes;
      return absl::StatusOr<Entry>(testing::entry_of_size(10));
    });
    EXPECT_TRUE(entry.ok());
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  test_hooks().publish_errno = 0;
  EXPECT_EQ(computes, 2);
  EXPECT_FALSE(cache->writable());
  EXPECT_THAT(err, HasSubstr("cannot be written (cannot store cache entry " + testing::key_for("a").key().hex() +
                             ": cannot write \""));
  EXPECT_THAT(err, HasSubstr("No space left on device); kernels will be compiled without caching"));
  EXPECT_EQ(err.find("cannot be written"), err.rfind("cannot be written"));
}

TEST(CacheFailures, UnreadableEntryIsAMissWithAWarning) {
  TempDir dir;
  auto cache = Cache::open(config_in(dir.path()));
  std::filesystem::path path = Layout(dir.path()).entry_path(testing::key_for("k").key());
  std::filesystem::create_directories(path);  // a directory where the entry file belongs: EISDIR
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache->lookup(testing::key_for("k")));
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("cannot read \"" + path.string() + "\": Is a directory; treating it as a cache miss"));
}

TEST(CacheFailures, UnusableLockDirectoryCompilesWithoutTheLock) {
  TempDir dir;
  auto cache = Cache::open(config_in(dir.path()));
  Layout layout(dir.path());
  std::filesystem::remove_all(layout.locks_dir());
  ASSERT_TRUE(write_file(layout.locks_dir(), "a file where the locks folder belongs").ok());
  ::testing::internal::CaptureStderr();
  auto entry = cache->get_or_compute(testing::key_for("k"), [] { return absl::StatusOr<Entry>(Entry{}); });
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(entry.ok());
  EXPECT_THAT(err, HasSubstr("cannot open lock \"" + layout.lock_path(testing::key_for("k").key()).string() +
                             "\": Not a directory; compiling without the cross-process compile lock"));
  EXPECT_TRUE(cache->lookup(testing::key_for("k")));
}

TEST(CacheFailures, StoreErrorOtherThanSpaceWarnsAndKeepsTheLayer) {
  TempDir dir;
  auto cache = Cache::open(config_in(dir.path()));
  Layout layout(dir.path());
  std::filesystem::remove_all(layout.staging_dir());
  ASSERT_TRUE(write_file(layout.staging_dir(), "a file where the staging folder belongs").ok());
  ::testing::internal::CaptureStderr();
  absl::Status status = cache->store(testing::key_for("k"), Entry{});
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("cannot store cache entry " + testing::key_for("k").key().hex() + ": cannot create \""));
  EXPECT_THAT(err, HasSubstr("Not a directory"));
  EXPECT_TRUE(cache->writable());
}

TEST(CacheFailures, DamagedCounterShardCountsAsZeroWithAWarning) {
  TempDir dir;
  auto cache = Cache::open(config_in(dir.path()));
  ASSERT_TRUE(cache->store(testing::key_for("k"), Entry{}).ok());
  std::filesystem::path shard = Layout(dir.path()).stats_dir() / "shard-15";
  ASSERT_TRUE(write_file(shard, "not a counter record").ok());
  ::testing::internal::CaptureStderr();
  Stats stats = cache->stats();
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("cache counters \"" + shard.string() + "\" are damaged; counting them as zero"));
  EXPECT_EQ(stats.stores, getpid() % 16 == 15 ? 0u : 1u);
}

}  // namespace
}  // namespace monotile::cache
