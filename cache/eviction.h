// Keeping the writable layer bounded: least-recently-used eviction (by mtime, which a hit
// touches) to a size and/or an age, and the sweep of stale staging and lock files. Removal is
// unlink(2): a reader that already opened an entry still reads all of it (readers hold no file
// open across calls), one that comes later gets a miss. Never called on a read-only layer.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "cache/cache.h"
#include "cache/layout.h"

namespace monotile::cache {

struct EvictionResult {
  uint64_t removed_entries = 0;
  uint64_t removed_bytes = 0;
  uint64_t kept_entries = 0;
  uint64_t kept_bytes = 0;
};

// Removes entries, oldest use first, until at most `max_bytes` remain, and every entry unused
// for longer than `max_age`. `keep` (the entry just stored) is never removed. Only entries this
// call unlinked count as removed (another process may be evicting the same ones).
EvictionResult evict_entries(const Layout& layout, std::optional<uint64_t> max_bytes,
                             std::optional<std::chrono::seconds> max_age,
                             std::optional<Key> keep = std::nullopt);

// Removes staging files older than `age` (left by a writer killed mid-publication) and lock files
// older than `age` that nobody holds. Returns how many files it removed.
int remove_stale_files(const Layout& layout, std::chrono::seconds age);

// How old a staging or lock file must be before the sweep removes it. An entry is written in
// milliseconds; an hour leaves room for a writer stopped in a debugger.
inline constexpr std::chrono::seconds kStaleFileAge{3600};

}  // namespace monotile::cache
