// The file operations the cache is built on: one-shot whole-file reads (a reader holds an entry
// open for one read only, so unlinking it meanwhile is safe) and whole-file atomic publication
// (staging file, fsync, no-replace rename, fsync of the directory).
#pragma once

#include <time.h>

#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace monotile::cache {

// An absl::Status for a failed system call: NotFound (ENOENT), PermissionDenied (EACCES, EPERM,
// EROFS), ResourceExhausted (ENOSPC, EDQUOT), else Internal; message "<context>: <strerror>".
absl::Status status_from_errno(int error, std::string_view context);

// Whether `status` means the directory cannot take files at all (degrade rather than retry).
bool is_unwritable(const absl::Status& status);

// The whole file, read through one open file description. NotFound when there is no file.
// `modified` (if given) receives the file's mtime as of the read.
absl::StatusOr<std::string> read_whole_file(const std::filesystem::path& path, timespec* modified = nullptr);

// Sets the file's modification time to now (LRU bookkeeping); failures are ignored by callers.
absl::Status touch_file(const std::filesystem::path& path);

enum class Publication { kPublished, kAlreadyPresent };

// Writes `bytes` to a new file in `staging_dir` named after `stem`, fsyncs it, then moves it to
// `final_path` only if nothing is there yet (an existing file is kept: whoever published first
// wins, and both wrote the same content). A crash at any point leaves either no file at
// `final_path` or the whole one; a staging file may be left behind for the stale-file sweep.
absl::StatusOr<Publication> publish_file(const std::filesystem::path& staging_dir,
                                         const std::filesystem::path& final_path,
                                         std::string_view bytes, std::string_view stem);

}  // namespace monotile::cache
