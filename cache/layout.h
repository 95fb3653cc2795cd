// Where things live inside one cache directory. Entries are the only files a reader looks at;
// everything else (staging files, lock files, counters) lives beside them and is never read as one:
//   <root>/CACHEDIR.TAG                      marks the tree as a cache for backup tools
//   <root>/entries/<2 hex>/<32 hex>.entry    published entries, sharded by the key's first byte
//   <root>/staging/<32 hex>.<pid>.<rand>.tmp entries being written (same filesystem: rename works)
//   <root>/locks/<32 hex>.lock               per-key compile locks
//   <root>/stats/shard-<nn>, evict.lock      persisted counters, the eviction lock
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "cache/cache.h"

namespace monotile::cache {

class Layout {
 public:
  explicit Layout(std::filesystem::path root) : root_(std::move(root)) {}

  const std::filesystem::path& root() const { return root_; }
  std::filesystem::path entries_dir() const { return root_ / "entries"; }
  std::filesystem::path entry_path(const Key& key) const;
  std::filesystem::path staging_dir() const { return root_ / "staging"; }
  std::filesystem::path locks_dir() const { return root_ / "locks"; }
  std::filesystem::path lock_path(const Key& key) const;
  std::filesystem::path stats_dir() const { return root_ / "stats"; }

  // The key an entry file's name spells ("<32 hex>.entry"), or nothing for any other name.
  static std::optional<Key> key_of_entry_file(const std::filesystem::path& path);

  // Creates the directories and CACHEDIR.TAG (existing ones are fine). Only for a writable layer.
  absl::Status create() const;

 private:
  std::filesystem::path root_;
};

// One entry file as the directory shows it, without reading it.
struct EntryFile {
  Key key;
  std::filesystem::path path;
  uint64_t size = 0;
  timespec last_used{};  // mtime: set at publication and on every hit in the writable layer
};

// Every entry file under root/entries (files with other names are skipped). A missing directory
// is an empty cache. Entries removed by another process during the scan are simply absent.
std::vector<EntryFile> scan_entry_files(const Layout& layout);

}  // namespace monotile::cache
