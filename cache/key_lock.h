// The per-key compile lock: flock(2) on <root>/locks/<key>.lock. The kernel drops a flock when its
// holder dies, however it dies, so a killed compiler never blocks the next one (no stale locks to
// detect). A flock belongs to one open file description: two threads of one process exclude each
// other too, since each opens the file itself.
#pragma once

#include <filesystem>
#include <optional>

#include "absl/status/statusor.h"

namespace monotile::cache {

class KeyLock {
 public:
  // Takes the lock without blocking: nothing when someone else holds it. The file is created if
  // needed and the holder's pid written into it (for messages about a long wait).
  static absl::StatusOr<std::optional<KeyLock>> try_acquire(const std::filesystem::path& path);

  KeyLock(KeyLock&& other) noexcept;
  KeyLock& operator=(KeyLock&&) = delete;
  // Unlinks the lock file, then releases the lock. A waiter that opened the unlinked file notices
  // (its inode is no longer the path's) and opens the path again, so exactly one holds it.
  ~KeyLock();

  // The pid written by the current holder, or 0 when unknown.
  static long holder_pid(const std::filesystem::path& path);

 private:
  KeyLock(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::filesystem::path path_;
  int fd_ = -1;
};

}  // namespace monotile::cache
