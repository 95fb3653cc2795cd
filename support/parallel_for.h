// parallel_for: independent pieces of host work (building programs, lowering them, reading their
// cache entries) spread over the machine's cores.
#pragma once

#include <cstddef>
#include <functional>

namespace monotile {

// Runs body(i) for every i in [0, n) on up to one thread per core (the calling thread among them),
// each thread taking the next i; returns when all are done. `body` must be safe to run
// concurrently.
void parallel_for(size_t n, const std::function<void(size_t)>& body);

}  // namespace monotile
