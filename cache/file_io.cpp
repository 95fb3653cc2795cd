// Whole-file reads and atomic publication (file_io.h). Publication never replaces an existing
// entry: renameat2(RENAME_NOREPLACE) where the filesystem has it, link()+unlink() where it does
// not (NFS), and a plain rename only where neither exists (both writers wrote the same bytes).
#include "cache/file_io.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "cache/test_hooks.h"

namespace monotile::cache {
namespace {

// Closes a descriptor on every path out of a function.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string random_suffix() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(generator()));
  return buffer;
}

absl::Status write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t written = write(fd, bytes.data(), bytes.size());
    if (written < 0) {
      if (errno == EINTR) continue;
      return status_from_errno(errno, "write");
    }
    bytes.remove_prefix(static_cast<size_t>(written));
  }
  return absl::OkStatus();
}

void sync_directory(const std::filesystem::path& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  fsync(fd);  // best effort: some filesystems refuse fsync on directories
  close(fd);
}

// Moves `from` to `to` unless `to` exists. Returns false when `to` already existed.
absl::StatusOr<bool> move_no_replace(const std::filesystem::path& from, const std::filesystem::path& to) {
  if (renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return true;
  if (errno == EEXIST) return false;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) {
    return status_from_errno(errno, absl::StrCat("cannot publish \"", to.string(), "\""));
  }
  if (link(from.c_str(), to.c_str()) == 0) {
    unlink(from.c_str());
    return true;
  }
  if (errno == EEXIST) return false;
  if (errno != EPERM && errno != ENOTSUP && errno != EOPNOTSUPP) {
    return status_from_errno(errno, absl::StrCat("cannot publish \"", to.string(), "\""));
  }
  if (rename(from.c_str(), to.c_str()) == 0) return true;
  return status_from_errno(errno, absl::StrCat("cannot publish \"", to.string(), "\""));
}

}  // namespace

absl::Status status_from_errno(int error, std::string_view context) {
  std::string message = absl::StrCat(std::string(context), ": ", std::strerror(error));
  switch (error) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(message);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    default:
      return absl::InternalError(message);
  }
}

bool is_unwritable(const absl::Status& status) {
  return absl::IsPermissionDenied(status) || absl::IsResourceExhausted(status);
}

absl::StatusOr<std::string> read_whole_file(const std::filesystem::path& path, timespec* modified) {
  FileDescriptor fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return status_from_errno(errno, absl::StrCat("cannot open \"", path.string(), "\""));
  struct stat info;
  if (fstat(fd.get(), &info) != 0) return status_from_errno(errno, absl::StrCat("cannot stat \"", path.string(), "\""));
  if (modified != nullptr) *modified = info.st_mtim;
  std::string bytes;
  // One read sized by fstat; the loop only matters for short reads (signals, huge files). A file
  // that grows while read would be a bug elsewhere: published entries are never written again.
  bytes.resize(static_cast<size_t>(info.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t got = read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return status_from_errno(errno, absl::StrCat("cannot read \"", path.string(), "\""));
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  bytes.resize(done);
  return bytes;
}

absl::Status touch_file(const std::filesystem::path& path) {
  if (utimensat(AT_FDCWD, path.c_str(), nullptr, 0) != 0) {
    return status_from_errno(errno, absl::StrCat("cannot touch \"", path.string(), "\""));
  }
  return absl::OkStatus();
}

absl::StatusOr<Publication> publish_file(const std::filesystem::path& staging_dir,
                                         const std::filesystem::path& final_path,
                                         std::string_view bytes, std::string_view stem) {
  std::filesystem::path staging =
      staging_dir / absl::StrCat(std::string(stem), ".", getpid(), ".", random_suffix(), ".tmp");
  if (int error = test_hooks().publish_errno; error != 0) {
    return status_from_errno(error, absl::StrCat("cannot write \"", staging.string(), "\""));
  }
  {
    // 0666 & umask, like any file the user creates: a cache shared by a group stays readable.
    FileDescriptor fd(open(staging.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (fd.get() < 0) {
      return status_from_errno(errno, absl::StrCat("cannot create \"", staging.string(), "\""));
    }
    absl::Status status = write_all(fd.get(), bytes);
    if (status.ok() && fsync(fd.get()) != 0) status = status_from_errno(errno, "fsync");
    if (!status.ok()) {
      unlink(staging.c_str());
      return absl::Status(status.code(), absl::StrCat("cannot write \"", staging.string(), "\": ", status.message()));
    }
  }
  if (test_hooks().before_publish) test_hooks().before_publish(staging);

  std::filesystem::path parent = final_path.parent_path();
  if (mkdir(parent.c_str(), 0777) != 0 && errno != EEXIST) {
    int error = errno;
    unlink(staging.c_str());
    return status_from_errno(error, absl::StrCat("cannot create directory \"", parent.string(), "\""));
  }
  absl::StatusOr<bool> moved = move_no_replace(staging, final_path);
  if (!moved.ok() || !*moved) unlink(staging.c_str());
  if (!moved.ok()) return moved.status();
  if (!*moved) return Publication::kAlreadyPresent;
  sync_directory(parent);
  return Publication::kPublished;
}

}  // namespace monotile::cache
