// flock-based per-key locks (key_lock.h). The unlink-on-release protocol keeps the locks
// directory empty in steady state; the inode check after locking makes it safe.
#include "cache/key_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "cache/file_io.h"

namespace monotile::cache {

absl::StatusOr<std::optional<KeyLock>> KeyLock::try_acquire(const std::filesystem::path& path) {
  // Bounded: each retry means the holder released and unlinked between our open and our check.
  for (int attempt = 0; attempt < 100; ++attempt) {
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) return status_from_errno(errno, absl::StrCat("cannot open lock \"", path.string(), "\""));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int error = errno;
      close(fd);
      if (error == EWOULDBLOCK) return std::optional<KeyLock>();
      return status_from_errno(error, absl::StrCat("cannot lock \"", path.string(), "\""));
    }
    struct stat held, named;
    if (fstat(fd, &held) == 0 && stat(path.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
        held.st_dev == named.st_dev) {
      std::string pid = absl::StrCat(getpid(), "\n");
      if (ftruncate(fd, 0) == 0) {
        [[maybe_unused]] ssize_t ignored = pwrite(fd, pid.data(), pid.size(), 0);
      }
      return std::optional<KeyLock>(KeyLock(path, fd));
    }
    close(fd);  // we locked a file that was unlinked meanwhile: try the path's current file
  }
  return absl::UnavailableError(absl::StrCat("lock \"", path.string(), "\" keeps changing under us"));
}

KeyLock::KeyLock(KeyLock&& other) noexcept : path_(std::move(other.path_)), fd_(other.fd_) {
  other.fd_ = -1;
}

KeyLock::~KeyLock() {
  if (fd_ < 0) return;
  unlink(path_.c_str());
  close(fd_);
}

long KeyLock::holder_pid(const std::filesystem::path& path) {
  auto content = read_whole_file(path);
  if (!content.ok()) return 0;
  return std::strtol(content->c_str(), nullptr, 10);
}

}  // namespace monotile::cache
