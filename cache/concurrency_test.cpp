// Many compilers of one key: processes (fork) and threads compile it exactly once and all get the
// same bytes; a process killed mid-publication leaves no visible entry and blocks nobody; a
// waiter gives up after its timeout and compiles itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <xxhash.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cache/cache.h"
#include "cache/key_lock.h"
#include "cache/layout.h"
#include "cache/test_hooks.h"
#include "cache/testing.h"
#include "support/files.h"

namespace monotile::cache {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

constexpr int kProcesses = 4;
constexpr int kThreads = 4;

Config config_in(const std::filesystem::path& dir) {
  Config config;
  config.writable_dir = dir;
  return config;
}

// A compile that takes a while (so the others really wait) and records each run in `log`.
absl::StatusOr<Entry> slow_compile(const std::filesystem::path& log) {
  int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  [[maybe_unused]] ssize_t ignored = write(fd, "x", 1);
  close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  return testing::entry_of_size(64 * 1024, 'k', "shared_kernel");
}

uint64_t digest(const Entry& entry) {
  return XXH3_64bits(entry.code_object.data(), entry.code_object.size()) ^ entry.metadata.size();
}

// Waits up to `timeout_ms` for a line on `fd`.
std::string read_line(int fd, int timeout_ms) {
  std::string line;
  pollfd item{fd, POLLIN, 0};
  char c;
  while (poll(&item, 1, timeout_ms) == 1 && read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

TEST(CacheConcurrency, ProcessesAndThreadsCompileOnceAndAgree) {
  TempDir dir;
  std::filesystem::path log = dir / "compiles";
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto cache = Cache::open(config_in(dir / "cache"));
      std::vector<uint64_t> digests(kThreads);
      std::atomic<bool> failed{false};
      std::vector<std::thread> threads;
      for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&, t] {
          auto entry = cache->get_or_compute(testing::key_for("contended"), [&] { return slow_compile(log); });
          if (!entry.ok()) failed = true;
          else digests[t] = digest(*entry);
        });
      }
      for (std::thread& thread : threads) thread.join();
      for (uint64_t d : digests) failed = failed || d != digests[0];
      std::string line = std::to_string(failed ? 0 : digests[0]) + "\n";
      [[maybe_unused]] ssize_t ignored = write(pipe_fds[1], line.data(), line.size());
      _exit(failed ? 1 : 0);
    }
    children.push_back(pid);
  }
  close(pipe_fds[1]);
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::string expected = std::to_string(digest(testing::entry_of_size(64 * 1024, 'k', "shared_kernel")));
  for (int p = 0; p < kProcesses; ++p) EXPECT_EQ(read_line(pipe_fds[0], 1000), expected);
  close(pipe_fds[0]);
  EXPECT_EQ(read_file(log).value_or(""), "x");  // exactly one compile among 16 callers
  Stats stats = Cache::open(config_in(dir / "cache"))->stats();
  EXPECT_EQ(stats.misses, 1u);
  EXPECT_EQ(stats.hits, static_cast<uint64_t>(kProcesses * kThreads - 1));
  EXPECT_EQ(stats.stores, 1u);
  EXPECT_TRUE(std::filesystem::is_empty(Layout(dir / "cache").locks_dir()));
}

TEST(CacheConcurrency, ThreadsOfOneProcessShareOneCompileWithoutADirectory) {
  auto cache = Cache::open(Config{});  // no writable layer: only the in-process rendezvous
  std::atomic<int> computes{0};
  std::vector<std::thread> threads;
  std::atomic<int> hits{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      bool hit = false;
      auto entry = cache->get_or_compute(testing::key_for("k"), [&] {
        ++computes;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return absl::StatusOr<Entry>(testing::entry_of_size(10));
      }, &hit);
      EXPECT_TRUE(entry.ok());
      hits += hit;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(computes.load(), 1);
  EXPECT_EQ(hits.load(), 7);
}

TEST(CacheConcurrency, KilledPublisherLeavesNoEntryAndBlocksNobody) {
  TempDir dir;
  Layout layout(dir / "cache");
  KeyBuilder key = testing::key_for("killed");
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto cache = Cache::open(config_in(layout.root()));
    test_hooks().before_publish = [&](const std::filesystem::path& staging) {
      std::string line = staging.string() + "\n";
      [[maybe_unused]] ssize_t ignored = write(pipe_fds[1], line.data(), line.size());
      pause();  // killed here: staged and synced, not yet renamed
    };
    cache->get_or_compute(key, [] { return absl::StatusOr<Entry>(testing::entry_of_size(1000)); }).IgnoreError();
    _exit(0);
  }
  std::string staging = read_line(pipe_fds[0], 10000);
  ASSERT_FALSE(staging.empty()) << "the writer never reached publication";
  EXPECT_TRUE(std::filesystem::exists(staging));
  // The writer holds the key's compile lock while it publishes.
  auto held = KeyLock::try_acquire(layout.lock_path(key.key()));
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(held->has_value());
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  close(pipe_fds[0]);
  close(pipe_fds[1]);

  Config config = config_in(layout.root());
  config.compile_wait_timeout = std::chrono::seconds(30);  // proves the lock is free, not timed out
  auto cache = Cache::open(config);
  EXPECT_FALSE(cache->lookup(key));
  EXPECT_FALSE(std::filesystem::exists(layout.entry_path(key.key())));
  auto start = std::chrono::steady_clock::now();
  bool hit = true;
  auto entry = cache->get_or_compute(key, [] { return absl::StatusOr<Entry>(testing::entry_of_size(1000)); }, &hit);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  ASSERT_TRUE(entry.ok());
  EXPECT_FALSE(hit);
  EXPECT_EQ(cache->lookup(key), testing::entry_of_size(1000));
  // The killed writer's staging file is left for the stale-file sweep, never read as an entry.
  EXPECT_TRUE(std::filesystem::exists(staging));
  testing::set_age(staging, 2 * 3600);
  Cache::open(config);
  EXPECT_FALSE(std::filesystem::exists(staging));
}

TEST(CacheConcurrency, WaiterGivesUpAfterItsTimeoutAndCompiles) {
  TempDir dir;
  Config config = config_in(dir.path());
  config.compile_wait_timeout = std::chrono::milliseconds(200);
  auto cache = Cache::open(config);
  static int run = 0;  // warnings are once per key and process: a fresh key per run (--gtest_repeat)
  KeyBuilder key = testing::key_for("hung" + std::to_string(run++));
  auto holder = KeyLock::try_acquire(Layout(dir.path()).lock_path(key.key()));  // a "hung compiler"
  ASSERT_TRUE(holder.ok() && holder->has_value());
  ::testing::internal::CaptureStderr();
  auto start = std::chrono::steady_clock::now();
  auto entry = cache->get_or_compute(key, [] { return absl::StatusOr<Entry>(testing::entry_of_size(10)); });
  auto waited = std::chrono::steady_clock::now() - start;
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(entry.ok());
  EXPECT_GE(waited, std::chrono::milliseconds(200));
  EXPECT_LT(waited, std::chrono::seconds(2));
  EXPECT_THAT(err, HasSubstr("waited 200 ms for process " + std::to_string(getpid()) + " to compile cache entry " +
                             key.key().hex()));
  EXPECT_THAT(err, HasSubstr("compiling it here; hint: MONOTILE_CACHE_WAIT_TIMEOUT"));
  EXPECT_EQ(cache->lookup(key), testing::entry_of_size(10));
}

TEST(CacheConcurrency, NetworkFilesystemTurnsCompileLocksOffWithAWarning) {
  TempDir dir;
  test_hooks().assume_network_filesystem = true;
  ::testing::internal::CaptureStderr();
  auto cache = Cache::open(config_in(dir.path()));
  std::string err = ::testing::internal::GetCapturedStderr();
  test_hooks().assume_network_filesystem = false;
  EXPECT_THAT(err, HasSubstr("is on a network filesystem (nfs (assumed by a test)): cross-process compile locks are off"));
  KeyBuilder key = testing::key_for("nfs");
  auto holder = KeyLock::try_acquire(Layout(dir.path()).lock_path(key.key()));
  ASSERT_TRUE(holder.ok() && holder->has_value());
  // No lock taken, so the held one does not make it wait.
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(cache->get_or_compute(key, [] { return absl::StatusOr<Entry>(Entry{}); }).ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  EXPECT_TRUE(cache->lookup(key));
}

}  // namespace
}  // namespace monotile::cache
