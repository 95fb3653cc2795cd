// In-process rendezvous of concurrent get_or_compute calls for one key: the first caller leads
// (looks across processes, computes, stores), the others wait for its result instead of each
// polling the lock file. A flight lives only while its leader works; later callers find the entry.
#pragma once

#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cache/cache.h"

namespace monotile::cache {

class InFlight {
 public:
  struct Flight {
    absl::Mutex mutex;
    bool done ABSL_GUARDED_BY(mutex) = false;
    absl::StatusOr<Entry> result ABSL_GUARDED_BY(mutex);
  };

  // The key's flight, and whether the caller is its leader (it must then call finish()).
  std::pair<std::shared_ptr<Flight>, bool> join(const Key& key);
  // Publishes the leader's result to the waiters and retires the flight.
  void finish(const Key& key, const std::shared_ptr<Flight>& flight, const absl::StatusOr<Entry>& result);
  // Blocks until the flight's leader finishes; returns a copy of its result.
  static absl::StatusOr<Entry> wait(Flight& flight);

 private:
  absl::Mutex mutex_;
  absl::flat_hash_map<std::pair<uint64_t, uint64_t>, std::shared_ptr<Flight>> flights_ ABSL_GUARDED_BY(mutex_);
};

}  // namespace monotile::cache
