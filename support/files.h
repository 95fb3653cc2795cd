// Whole-file writes and reads for tools and the JIT's side files (requests, failed sources, dumps,
// exports). The kernel cache's own publication is cache/file_io.*: atomic and fsync'd.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace monotile {

// Writes `bytes` to `path`, replacing it, after creating its folder. The error names the path and
// the system's reason.
absl::Status write_file(const std::filesystem::path& path, std::string_view bytes);

// The whole file, or an error naming the path and the system's reason.
absl::StatusOr<std::string> read_file(const std::filesystem::path& path);

}  // namespace monotile
