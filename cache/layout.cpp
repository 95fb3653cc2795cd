// Paths of the cache directory and the scan of its entries (layout.h). Scanning uses readdir and
// lstat: no exceptions, and a file vanishing mid-scan (evicted elsewhere) is not an error.
#include "cache/layout.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "cache/file_io.h"

namespace monotile::cache {
namespace {

constexpr std::string_view kEntrySuffix = ".entry";
constexpr std::string_view kCacheDirTag =
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file marks a monotile kernel cache; backup tools may skip this directory.\n"
    "# See docs/cache.md or run `monotile cache --help`.\n";

// Names in `dir`, without "." and "..". A missing or unreadable directory has none.
std::vector<std::string> list_names(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  DIR* handle = opendir(dir.c_str());
  if (handle == nullptr) return names;
  while (dirent* item = readdir(handle)) {
    std::string_view name = item->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  closedir(handle);
  return names;
}

}  // namespace

std::filesystem::path Layout::entry_path(const Key& key) const {
  std::string hex = key.hex();
  return entries_dir() / hex.substr(0, 2) / (hex + std::string(kEntrySuffix));
}

std::filesystem::path Layout::lock_path(const Key& key) const {
  return locks_dir() / (key.hex() + ".lock");
}

std::optional<Key> Layout::key_of_entry_file(const std::filesystem::path& path) {
  std::string name = path.filename().string();
  if (name.size() != 32 + kEntrySuffix.size() || !name.ends_with(kEntrySuffix)) return std::nullopt;
  return Key::from_hex(std::string_view(name).substr(0, 32));
}

absl::Status Layout::create() const {
  for (const std::filesystem::path& dir : {root_, entries_dir(), staging_dir(), locks_dir(), stats_dir()}) {
    std::error_code error;
    std::filesystem::create_directories(dir, error);
    if (error) {
      return status_from_errno(error.value(), absl::StrCat("cannot create directory \"", dir.string(), "\""));
    }
  }
  std::filesystem::path tag = root_ / "CACHEDIR.TAG";
  if (access(tag.c_str(), F_OK) != 0) {
    // Written through staging + rename like an entry, so a reader never sees half a tag.
    auto written = publish_file(staging_dir(), tag, kCacheDirTag, "CACHEDIR.TAG");
    if (!written.ok()) return written.status();
  }
  // A directory can exist and still refuse files (read-only mount, foreign owner): probe it.
  std::filesystem::path probe = staging_dir() / absl::StrCat("probe.", getpid(), ".tmp");
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return status_from_errno(errno, absl::StrCat("cannot write in \"", staging_dir().string(), "\""));
  close(fd);
  unlink(probe.c_str());
  return absl::OkStatus();
}

std::vector<EntryFile> scan_entry_files(const Layout& layout) {
  std::vector<EntryFile> files;
  for (const std::string& shard : list_names(layout.entries_dir())) {
    std::filesystem::path shard_dir = layout.entries_dir() / shard;
    for (const std::string& name : list_names(shard_dir)) {
      std::filesystem::path path = shard_dir / name;
      std::optional<Key> key = Layout::key_of_entry_file(path);
      struct stat info;
      if (!key || lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) continue;
      files.push_back(EntryFile{*key, path, static_cast<uint64_t>(info.st_size), info.st_mtim});
    }
  }
  return files;
}

}  // namespace monotile::cache
