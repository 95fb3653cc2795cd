// Counters persisted across processes without a global lock: 16 shard files in <root>/stats, a
// process adds to shard pid % 16 under that shard's flock, and stats() sums them all. Each shard
// is one checksummed 72-byte record rewritten in place; a damaged shard counts as zero.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>

#include <mutex>

#include "absl/status/status.h"
#include "cache/cache.h"

namespace monotile::cache {

inline constexpr int kCounterShards = 16;

// Changes to the counters. bytes and entries move both ways (stores add, removals subtract).
struct CounterDelta {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t stores = 0;
  int64_t corrupt = 0;
  int64_t evictions = 0;
  int64_t bytes = 0;
  int64_t entries = 0;
};

class PersistentCounters {
 public:
  explicit PersistentCounters(std::filesystem::path stats_dir) : dir_(std::move(stats_dir)) {}
  ~PersistentCounters();
  PersistentCounters(const PersistentCounters&) = delete;
  PersistentCounters& operator=(const PersistentCounters&) = delete;

  absl::Status add(const CounterDelta& delta);
  // The sum of every shard (bytes and entries clamped at zero). Reads only; never creates files.
  Stats sum() const;
  // Corrects bytes and entries to a scan's result by adding the difference to this process's shard.
  absl::Status set_size(uint64_t bytes, uint64_t entries);
  // Zeroes the event counters (hits, misses, stores, corrupt, evictions), keeping the size.
  absl::Status zero_events();

 private:
  absl::Status update_shard(int shard, const std::function<void(CounterDelta&)>& change);

  std::filesystem::path dir_;
  std::mutex mutex_;  // flock does not exclude threads sharing our descriptor
  int fd_ = -1;       // guarded by mutex_
  long fd_pid_ = 0;   // guarded by mutex_; a forked child must not share its parent's lock
};

}  // namespace monotile::cache
