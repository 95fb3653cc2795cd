// In-process rendezvous of concurrent get_or_compute calls for one key: the first caller leads
// (looks across processes, computes, stores), the others wait for its result instead of each
// polling the lock file. A flight lives only while its leader works; later callers find the entry.
// std::mutex rather than absl::Mutex: ThreadSanitizer understands it without an instrumented Abseil.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "absl/status/statusor.h"
#include "cache/cache.h"

namespace monotile::cache {

class InFlight {
 public:
  struct Flight {
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;  // guarded by mutex
    absl::StatusOr<Entry> result;  // guarded by mutex
  };

  // The key's flight, and whether the caller is its leader (it must then call finish()).
  std::pair<std::shared_ptr<Flight>, bool> join(const Key& key);
  // Publishes the leader's result to the waiters and retires the flight.
  void finish(const Key& key, const std::shared_ptr<Flight>& flight, const absl::StatusOr<Entry>& result);
  // Blocks until the flight's leader finishes; returns a copy of its result.
  static absl::StatusOr<Entry> wait(Flight& flight);

 private:
  std::mutex mutex_;
  std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<Flight>> flights_;  // guarded by mutex_
};

}  // namespace monotile::cache
