// The compile lock: exclusive across descriptors (so across threads and processes), its file
// gone after release, its holder's pid readable, and free again once its holder dies.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include "cache/key_lock.h"
#include "cache/testing.h"

namespace monotile::cache {
namespace {

TEST(KeyLock, IsExclusiveAndRemovesItsFile) {
  testing::TempDir dir;
  std::filesystem::path path = dir / "k.lock";
  {
    auto first = KeyLock::try_acquire(path);
    ASSERT_TRUE(first.ok() && first->has_value());
    auto second = KeyLock::try_acquire(path);
    ASSERT_TRUE(second.ok());
    EXPECT_FALSE(second->has_value());
    EXPECT_EQ(KeyLock::holder_pid(path), getpid());
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  auto again = KeyLock::try_acquire(path);
  EXPECT_TRUE(again.ok() && again->has_value());
}

TEST(KeyLock, IsFreeOnceItsHolderIsKilled) {
  testing::TempDir dir;
  std::filesystem::path path = dir / "k.lock";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto lock = KeyLock::try_acquire(path);
    [[maybe_unused]] ssize_t ignored = write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  auto held = KeyLock::try_acquire(path);
  ASSERT_TRUE(held.ok());
  EXPECT_FALSE(held->has_value());
  EXPECT_EQ(KeyLock::holder_pid(path), pid);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_TRUE(std::filesystem::exists(path));  // left behind by the killed holder...
  auto taken = KeyLock::try_acquire(path);     // ...but not held by anyone
  EXPECT_TRUE(taken.ok() && taken->has_value());
  close(ready[0]);
  close(ready[1]);
}

}  // namespace
}  // namespace monotile::cache
