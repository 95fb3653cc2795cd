// Whole-directory operations behind `monotile cache`: inspect (list), verify, prune, clear and a
// scan summary. They work on one directory's Layout without opening a Cache, create nothing, and
// write only when asked to remove (so `list` and `verify` are safe on a shipped read-only bundle).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "cache/eviction.h"
#include "cache/layout.h"

namespace monotile::cache {

struct EntryReport {
  Key key;
  std::filesystem::path path;
  uint64_t size = 0;
  timespec last_used{};
  uint64_t created_unix_ms = 0;
  std::string kernel;  // metadata "kernel", empty when absent
  std::string target;  // metadata "target"
  std::string defect;  // empty when the entry verifies
};

// Reads and verifies every entry: format, checksum, and the header's key against the file name
// (the preimage is not known here; lookups check it). Most recently used first.
std::vector<EntryReport> inspect_entries(const Layout& layout);

struct VerifyResult {
  uint64_t checked = 0;
  uint64_t removed = 0;
  std::vector<EntryReport> bad;
};
// inspect_entries, and with `remove` unlinks the bad ones (counted as corrupt in the counters).
VerifyResult verify_entries(const Layout& layout, bool remove);

struct LayerSummary {
  uint64_t entries = 0;
  uint64_t bytes = 0;
};
LayerSummary summarize_entries(const Layout& layout);

// Evicts to `max_bytes` and/or `max_age` (LRU), sweeps stale staging and lock files, counts the
// evictions and corrects the persisted size.
EvictionResult prune_entries(const Layout& layout, std::optional<uint64_t> max_bytes,
                             std::optional<std::chrono::seconds> max_age);

// Removes every entry and staging file and every lock nobody holds; the event counters stay.
EvictionResult clear_entries(const Layout& layout);

// The counters persisted in `layout`, or zeros when it has none.
Stats persisted_stats(const Layout& layout);

// Zeroes the persisted event counters (hits, misses, stores, corrupt, evictions).
absl::Status zero_stats(const Layout& layout);

}  // namespace monotile::cache
