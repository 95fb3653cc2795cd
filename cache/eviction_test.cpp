// The size limit: LRU eviction keeps what was used last, never the entry just stored; pruning by
// age; stats follow.
#include <gtest/gtest.h>

#include "cache/cache.h"
#include "cache/entry_format.h"
#include "cache/layout.h"
#include "cache/maintenance.h"
#include "cache/testing.h"

namespace monotile::cache {
namespace {

using testing::TempDir;

constexpr size_t kCode = 10000;

uint64_t entry_bytes(const std::filesystem::path& dir, const std::string& name) {
  return std::filesystem::file_size(Layout(dir).entry_path(testing::key_for(name).key()));
}

bool present(const std::filesystem::path& dir, const std::string& name) {
  return std::filesystem::exists(Layout(dir).entry_path(testing::key_for(name).key()));
}

TEST(Eviction, KeepsTheMostRecentlyUsed) {
  TempDir dir;
  Config config;
  config.writable_dir = dir.path();
  config.max_bytes = 0;  // filled without a limit first, then reopened with one
  {
    auto cache = Cache::open(config);
    long age = 100;
    for (const char* name : {"a", "b", "c", "d"}) {
      ASSERT_TRUE(cache->store(testing::key_for(name), testing::entry_of_size(kCode)).ok());
      testing::set_age(Layout(dir.path()).entry_path(testing::key_for(name).key()), age -= 10);
    }
  }
  uint64_t one = entry_bytes(dir.path(), "a");
  config.max_bytes = 4 * one + one / 2;
  auto cache = Cache::open(config);
  ASSERT_TRUE(cache->lookup(testing::key_for("a")));  // a becomes the most recently used
  ASSERT_TRUE(cache->store(testing::key_for("e"), testing::entry_of_size(kCode)).ok());  // 5 > 4.5
  EXPECT_TRUE(present(dir.path(), "a"));
  EXPECT_FALSE(present(dir.path(), "b"));  // the least recently used goes first...
  EXPECT_TRUE(present(dir.path(), "c"));   // ...and only as many as needed (down to 90%)
  EXPECT_TRUE(present(dir.path(), "d"));
  EXPECT_TRUE(present(dir.path(), "e"));
  Stats stats = cache->stats();
  EXPECT_EQ(stats.evictions, 1u);
  EXPECT_EQ(stats.entries, 4u);
  EXPECT_EQ(stats.bytes, 4 * one);
}

TEST(Eviction, NeverEvictsTheEntryJustStored) {
  TempDir dir;
  Config config;
  config.writable_dir = dir.path();
  config.max_bytes = 100;  // smaller than any entry
  auto cache = Cache::open(config);
  ASSERT_TRUE(cache->store(testing::key_for("old"), testing::entry_of_size(kCode)).ok());
  ASSERT_TRUE(cache->store(testing::key_for("new"), testing::entry_of_size(kCode)).ok());
  EXPECT_FALSE(present(dir.path(), "old"));
  EXPECT_TRUE(present(dir.path(), "new"));
  EXPECT_TRUE(cache->lookup(testing::key_for("new")));
}

TEST(Eviction, PruneByAgeAndSize) {
  TempDir dir;
  Config config;
  config.writable_dir = dir.path();
  auto cache = Cache::open(config);
  for (const char* name : {"stale", "recent", "fresh"}) {
    ASSERT_TRUE(cache->store(testing::key_for(name), testing::entry_of_size(kCode)).ok());
  }
  Layout layout(dir.path());
  testing::set_age(layout.entry_path(testing::key_for("stale").key()), 10 * 86400);
  testing::set_age(layout.entry_path(testing::key_for("recent").key()), 3600);
  EvictionResult by_age = prune_entries(layout, std::nullopt, std::chrono::seconds(86400));
  EXPECT_EQ(by_age.removed_entries, 1u);
  EXPECT_FALSE(present(dir.path(), "stale"));
  EvictionResult by_size = prune_entries(layout, entry_bytes(dir.path(), "fresh"), std::nullopt);
  EXPECT_EQ(by_size.removed_entries, 1u);
  EXPECT_FALSE(present(dir.path(), "recent"));
  EXPECT_TRUE(present(dir.path(), "fresh"));
  Stats stats = cache->stats();
  EXPECT_EQ(stats.evictions, 2u);
  EXPECT_EQ(stats.entries, 1u);
}

TEST(Eviction, ReaderOfAnEvictedEntryStillReadsItWhole) {
  // POSIX keeps an unlinked file's data for descriptors already open: the reader's one read wins.
  TempDir dir;
  Config config;
  config.writable_dir = dir.path();
  auto cache = Cache::open(config);
  ASSERT_TRUE(cache->store(testing::key_for("k"), testing::entry_of_size(kCode)).ok());
  std::filesystem::path path = Layout(dir.path()).entry_path(testing::key_for("k").key());
  int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(clear_entries(Layout(dir.path())).removed_entries, 1u);
  struct stat info;
  ASSERT_EQ(fstat(fd, &info), 0);
  std::string bytes(static_cast<size_t>(info.st_size), '\0');
  EXPECT_EQ(read(fd, bytes.data(), bytes.size()), info.st_size);
  close(fd);
  auto parsed = parse_entry(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->entry, testing::entry_of_size(kCode));
  EXPECT_FALSE(cache->lookup(testing::key_for("k")));
}

}  // namespace
}  // namespace monotile::cache
