// parallel_for: a shared counter handing out indices to a pool made for the call.
#include "support/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace monotile {

void parallel_for(size_t n, const std::function<void(size_t)>& body) {
  const size_t threads = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) body(i);
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
}

}  // namespace monotile
