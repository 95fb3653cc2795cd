// compile_all: many builds at once, deduplicated by key, compiled on a pool of `jobs` threads (each
// compile in its own worker process), progress reported as each finishes, never stopping at the
// first failure.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "jit/build.h"
#include "jit/jit.h"

namespace monotile::jit {

// One finished unique build.
struct CompileProgress {
  size_t done = 0;     // finished so far, this one included
  size_t total = 0;    // unique builds
  const Build* build = nullptr;
  bool hit = false;
  double seconds = 0;
  const absl::Status* status = nullptr;  // ok, or why it failed
};

struct CompileAllOptions {
  int jobs = 0;  // 0: one per core
  // Called from the pool's threads, one call at a time.
  std::function<void(const CompileProgress&)> on_progress;
};

struct CompileAllResult {
  // One per input build, in input order; duplicates share their first occurrence's result.
  std::vector<absl::StatusOr<CompiledBuild>> results;
  size_t unique = 0;
  size_t hits = 0;
  size_t misses = 0;
  size_t failures = 0;
  double seconds = 0;  // wall time of the whole call
  bool ok() const { return failures == 0; }
};

CompileAllResult compile_all(Jit& jit, std::span<const Build> builds, const CompileAllOptions& options = {});

}  // namespace monotile::jit
