// The on-disk kernel cache: content-addressed entries (XXH3-128 of a canonical key preimage),
// published atomically, verified on every read, shared by processes without reader locks.
// It knows keys and bytes only: no DSL, no compiler, no GPU. Configuration, layout and the entry
// grammar: docs/cache.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace monotile::cache {

// The version of the key preimage and of the entry format. Bumping it changes every key (it heads
// every preimage) and makes older readers reject newer entries as "unsupported format version".
inline constexpr uint32_t kFormatVersion = 1;

// A 128-bit content hash.
struct Key {
  uint64_t high = 0;
  uint64_t low = 0;
  std::string hex() const;  // 32 lower-case hex digits, high first
  static std::optional<Key> from_hex(std::string_view hex);
  friend bool operator==(const Key&, const Key&) = default;
};

// The canonical preimage of a key: a header naming kFormatVersion, then named fields in the order
// they are added. Each field is delimited by its name's and its value's lengths, so no two different
// field lists share a preimage.
class KeyBuilder {
 public:
  // Adds a field; a name used twice is a programming error (aborts).
  KeyBuilder& add(std::string_view name, std::string_view value);
  // Adds a field whose value is a set of items (compiler options, defines): sorted, each item
  // length-delimited, so the order the caller gathered them in never changes the key.
  KeyBuilder& add_sorted(std::string_view name, std::vector<std::string> items);
  // The exact bytes hashed.
  const std::string& preimage() const { return preimage_; }
  // The fields as "name = value" lines, long values abbreviated, for debugging a miss.
  std::string text() const;
  Key key() const;  // XXH3-128 of preimage()

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
  std::string preimage_ = preimage_header();
  static std::string preimage_header();
};

// What one entry holds. The cache stores the sections as bytes and interprets none of them,
// except the metadata names "kernel" and "target", which `monotile cache list` shows.
struct Entry {
  std::string code_object;
  std::string resource_report;
  std::string compile_log;
  std::map<std::string, std::string> metadata;
  friend bool operator==(const Entry&, const Entry&) = default;
};

struct Config {
  std::filesystem::path writable_dir;  // empty: no writable layer
  std::vector<std::filesystem::path> read_only_dirs;  // searched first, in order, never written
  uint64_t max_bytes = uint64_t{8} << 30;  // writable layer's limit; LRU eviction above it
  bool enabled = true;
  // How long get_or_compute waits for another process compiling the same key before it compiles
  // the key itself (a hung compiler must not hang every worker).
  std::chrono::milliseconds compile_wait_timeout{std::chrono::minutes(5)};

  // MONOTILE_CACHE_DIR (default $XDG_CACHE_HOME/monotile or ~/.cache/monotile),
  // MONOTILE_CACHE_READONLY_DIRS (colon-separated), MONOTILE_CACHE_MAX_SIZE ("500M", "8G"),
  // MONOTILE_CACHE_DISABLE=1, MONOTILE_CACHE_WAIT_TIMEOUT (seconds). Documented in docs/cache.md.
  // A malformed value is warned about once and leaves the default.
  static Config from_environment();
};

// Counts persisted in the writable directory and summed across processes.
struct Stats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t stores = 0;
  uint64_t corrupt_removed = 0;  // bad entries found (removed unless in a read-only layer)
  uint64_t evictions = 0;
  uint64_t bytes = 0;  // size of the writable layer now (tracked; each eviction scan corrects it)
  uint64_t entries = 0;
};

class Cache {
 public:
  // Never fails: an unusable writable directory degrades to a cache without a writable layer,
  // with one warning.
  static std::unique_ptr<Cache> open(const Config& config);
  virtual ~Cache() = default;

  // A verified entry whose stored preimage digest matches `key`, or nothing. A bad entry found on
  // the way is removed (when writable), counted and logged once.
  virtual std::optional<Entry> lookup(const KeyBuilder& key) = 0;

  // Publishes atomically into the writable layer; an error only when there is nothing to write to
  // or the write failed (the caller may ignore it: the cache is an optimisation).
  virtual absl::Status store(const KeyBuilder& key, const Entry& entry) = 0;

  // lookup(), and on a miss runs `compute` at most once per key across the threads and processes
  // sharing the directory (the others wait for the winner's entry), then stores its result.
  // A process waits for another one at most config().compile_wait_timeout, then computes itself;
  // on a network filesystem processes do not wait for each other (the first store wins).
  // `hit` (if given) says whether the entry came from the cache, that is whether this call did not
  // run `compute` (a thread of this process computing the same key at once shares its result).
  // A failed `compute` is returned as is and stores nothing.
  virtual absl::StatusOr<Entry> get_or_compute(const KeyBuilder& key,
                                               const std::function<absl::StatusOr<Entry>()>& compute,
                                               bool* hit = nullptr) = 0;

  virtual Stats stats() const = 0;
  // This process's counts only (stats() sums every process that used the writable directory);
  // bytes and entries are those this process added. What "a warm executor compiles nothing" checks.
  virtual Stats process_stats() const { return {}; }
  virtual const Config& config() const = 0;
  // Whether entries can be stored (false after degrading).
  virtual bool writable() const = 0;
};

}  // namespace monotile::cache
