// The in-process flight table (in_flight.h).
#include "cache/in_flight.h"

namespace monotile::cache {

std::pair<std::shared_ptr<InFlight::Flight>, bool> InFlight::join(const Key& key) {
  std::lock_guard lock(mutex_);
  auto [it, inserted] = flights_.try_emplace(std::make_pair(key.high, key.low));
  if (inserted) it->second = std::make_shared<Flight>();
  return {it->second, inserted};
}

void InFlight::finish(const Key& key, const std::shared_ptr<Flight>& flight,
                      const absl::StatusOr<Entry>& result) {
  {
    std::lock_guard lock(mutex_);
    flights_.erase(std::make_pair(key.high, key.low));
  }
  {
    std::lock_guard lock(flight->mutex);
    flight->result = result;
    flight->done = true;
  }
  flight->finished.notify_all();
}

absl::StatusOr<Entry> InFlight::wait(Flight& flight) {
  std::unique_lock lock(flight.mutex);
  flight.finished.wait(lock, [&] { return flight.done; });
  return flight.result;
}

}  // namespace monotile::cache
