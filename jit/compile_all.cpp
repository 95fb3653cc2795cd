// compile_all: keys first (which deduplicates), then a pool of threads taking unique builds off a
// shared counter; results are copied back to every duplicate.
#include "jit/compile_all.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace monotile::jit {

CompileAllResult compile_all(Jit& jit, std::span<const Build> builds, const CompileAllOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  CompileAllResult all;
  all.results.resize(builds.size(), absl::UnknownError("not compiled"));

  // Deduplicate by key; a build whose key cannot be made (no compiler) is its own unique entry.
  std::vector<size_t> unique;                 // index of each unique build's first occurrence
  std::vector<size_t> first_of(builds.size());
  absl::flat_hash_map<std::string, size_t> seen;
  for (size_t i = 0; i < builds.size(); ++i) {
    absl::StatusOr<cache::KeyBuilder> key = jit.key(builds[i]);
    std::string id = key.ok() ? key->key().hex() : absl::StrCat("unkeyed ", i);
    auto [found, inserted] = seen.emplace(id, i);
    first_of[i] = found->second;
    if (inserted) unique.push_back(i);
  }
  all.unique = unique.size();

  int jobs = options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  jobs = std::min<int>(jobs, static_cast<int>(std::max<size_t>(1, unique.size())));
  std::atomic<size_t> next{0};
  absl::Mutex mutex;
  size_t done = 0;
  auto work = [&] {
    for (size_t slot = next++; slot < unique.size(); slot = next++) {
      const Build& build = builds[unique[slot]];
      const auto begun = std::chrono::steady_clock::now();
      absl::StatusOr<CompiledBuild> result = jit.compile_build(build);
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
      absl::MutexLock lock(&mutex);
      bool hit = result.ok() && result->hit;
      all.hits += result.ok() && hit;
      all.misses += result.ok() && !hit;
      all.failures += !result.ok();
      all.results[unique[slot]] = std::move(result);
      ++done;
      if (options.on_progress) {
        absl::Status status = all.results[unique[slot]].status();
        options.on_progress(CompileProgress{done, unique.size(), &build, hit, seconds, &status});
      }
    }
  };
  std::vector<std::thread> pool;
  for (int i = 1; i < jobs; ++i) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();

  for (size_t i = 0; i < builds.size(); ++i) {
    if (first_of[i] == i) continue;
    all.results[i] = all.results[first_of[i]];
    if (all.results[i].ok()) {
      all.results[i]->name = builds[i].name;
      all.results[i]->launch = builds[i].launch;
    }
  }
  all.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return all;
}

}  // namespace monotile::jit
