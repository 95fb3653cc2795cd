// LRU eviction and the stale-file sweep (eviction.h).
#include "cache/eviction.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cache/key_lock.h"

namespace monotile::cache {
namespace {

bool older(const timespec& a, const timespec& b) {
  return a.tv_sec != b.tv_sec ? a.tv_sec < b.tv_sec : a.tv_nsec < b.tv_nsec;
}

std::chrono::seconds age_of(const timespec& time) {
  return std::chrono::seconds(std::max<long long>(0, static_cast<long long>(::time(nullptr)) - time.tv_sec));
}

}  // namespace

EvictionResult evict_entries(const Layout& layout, std::optional<uint64_t> max_bytes,
                             std::optional<std::chrono::seconds> max_age, std::optional<Key> keep) {
  std::vector<EntryFile> files = scan_entry_files(layout);
  std::sort(files.begin(), files.end(),
            [](const EntryFile& a, const EntryFile& b) { return older(a.last_used, b.last_used); });
  EvictionResult result;
  uint64_t total = 0;
  for (const EntryFile& file : files) total += file.size;
  for (const EntryFile& file : files) {
    bool too_big = max_bytes && total > *max_bytes;
    bool too_old = max_age && age_of(file.last_used) > *max_age;
    bool kept = keep && *keep == file.key;
    if ((too_big || too_old) && !kept) {
      // Whether or not our unlink won, the file no longer counts toward the layer's size.
      total -= file.size;
      if (unlink(file.path.c_str()) == 0) {
        ++result.removed_entries;
        result.removed_bytes += file.size;
      }
      continue;
    }
    ++result.kept_entries;
    result.kept_bytes += file.size;
  }
  return result;
}

int remove_stale_files(const Layout& layout, std::chrono::seconds age) {
  int removed = 0;
  for (const std::filesystem::path& dir : {layout.staging_dir(), layout.locks_dir()}) {
    bool locks = dir == layout.locks_dir();
    DIR* handle = opendir(dir.c_str());
    if (handle == nullptr) continue;
    std::vector<std::filesystem::path> stale;
    while (dirent* item = readdir(handle)) {
      std::string_view name = item->d_name;
      if (name == "." || name == "..") continue;
      std::filesystem::path path = dir / std::string(name);
      struct stat info;
      if (lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && age_of(info.st_mtim) > age) {
        stale.push_back(path);
      }
    }
    closedir(handle);
    for (const std::filesystem::path& path : stale) {
      if (locks) {
        // Only a lock nobody holds is stale; taking it and releasing it unlinks the file.
        auto lock = KeyLock::try_acquire(path);
        if (lock.ok() && lock->has_value()) {
          lock->reset();
          ++removed;
        }
      } else if (unlink(path.c_str()) == 0) {
        ++removed;
      }
    }
  }
  return removed;
}

}  // namespace monotile::cache
