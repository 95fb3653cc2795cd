// jit_bench: cold compile time per build per compiler (in a worker process, and in-process for the
// isolation's cost), compile_all's speed-up from 1 to 2 jobs, and the warm (cache hit) load time
// per build. Prints tables; every cache lives in a temporary folder.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "jit/compile_all.h"
#include "jit/jit.h"
#include "jit/test_support.h"
#include "tests/jit_fixtures/samples.h"
#include "support/check.h"

namespace monotile::jit {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<Build> samples_for(const std::vector<dsl::Target>& targets) {
  std::vector<Build> builds;
  for (const dsl::Target& target : targets) {
    std::vector<Build> found = monotile::testing::samples::sample_builds(target);
    builds.insert(builds.end(), found.begin(), found.end());
  }
  return builds;
}

int run(int repeats) {
  std::vector<dsl::Target> targets;
  // The first make_compiler of a process pays dlopen and the version queries: a warm worker's
  // start-up cost on top of its cache hits.
  std::string setup;
  for (const char* text : {"sm_90a", "gfx90a"}) {
    dsl::Target target = *dsl::Target::parse(text);
    double setup_start = now_seconds();
    std::optional<std::string> missing = testing::missing_compiler(text);
    setup += absl::StrFormat(" %s %.1f ms", text, (now_seconds() - setup_start) * 1e3);
    if (missing) {
      std::printf("skipping %s: %s\n", text, missing->c_str());
      continue;
    }
    targets.push_back(target);
  }
  std::vector<Build> builds = samples_for(targets);

  std::printf("cold compile per build (median of %d; cache off)\n", repeats);
  std::printf("%-14s %-8s %12s %12s %8s\n", "build", "target", "worker s", "in-proc s", "regs");
  for (const Build& build : builds) {
    double medians[2];
    int registers = 0;
    for (int mode = 0; mode < 2; ++mode) {
      testing::TempDir dir;
      JitConfig config = testing::config_in(dir.path());
      config.cache.enabled = false;
      config.compiler.isolation = mode == 0 ? Isolation::kWorkerProcess : Isolation::kInProcess;
      Jit jit(config);
      MT_CHECK(jit.compiler(build.target).ok());
      std::vector<double> times;
      for (int i = 0; i < repeats; ++i) {
        double start = now_seconds();
        absl::StatusOr<CompiledBuild> compiled = jit.compile_build(build);
        times.push_back(now_seconds() - start);
        if (!compiled.ok()) {
          std::printf("error: %s\n", std::string(compiled.status().message()).c_str());
          return 1;
        }
        registers = compiled->report.registers;
      }
      std::sort(times.begin(), times.end());
      medians[mode] = times[times.size() / 2];
    }
    std::printf("%-14s %-8s %12.3f %12.3f %8d\n", build.name.c_str(), build.target.str().c_str(), medians[0],
                medians[1], registers);
  }

  std::printf("\ncompile_all of %zu builds, cold (fresh cache each run)\n", builds.size());
  double by_jobs[3] = {0, 0, 0};
  for (int jobs : {1, 2}) {
    testing::TempDir dir;
    Jit jit(testing::config_in(dir.path()));
    for (const dsl::Target& target : targets) MT_CHECK(jit.compiler(target).ok());
    CompileAllOptions options;
    options.jobs = jobs;
    CompileAllResult result = compile_all(jit, builds, options);
    by_jobs[jobs] = result.seconds;
    std::printf("  jobs=%d: %.2f s (%zu misses, %zu failed)\n", jobs, result.seconds, result.misses, result.failures);
  }
  std::printf("  speed-up jobs=2 over jobs=1: %.2fx\n", by_jobs[1] / by_jobs[2]);

  std::printf("\nwarm load per build (cache hit: key, read, verify, report check), mean of %d\n", repeats * 10);
  testing::TempDir dir;
  {
    Jit fill(testing::config_in(dir.path()));
    compile_all(fill, builds);
  }
  Jit jit(testing::config_in(dir.path()));
  for (const dsl::Target& target : targets) MT_CHECK(jit.compiler(target).ok());
  std::printf("  compilers' first load in this process (dlopen, versions, device-libs hash):%s\n", setup.c_str());
  std::printf("%-14s %-8s %10s %8s\n", "build", "target", "warm ms", "bytes");
  for (const Build& build : builds) {
    size_t bytes = 0;
    double start = now_seconds();
    for (int i = 0; i < repeats * 10; ++i) {
      absl::StatusOr<CompiledBuild> compiled = jit.compile_build(build);
      MT_CHECK(compiled.ok() && compiled->hit);
      bytes = compiled->code_object.size();
    }
    std::printf("%-14s %-8s %10.3f %8zu\n", build.name.c_str(), build.target.str().c_str(),
                (now_seconds() - start) * 1e3 / (repeats * 10), bytes);
  }
  return 0;
}

}  // namespace
}  // namespace monotile::jit

int main(int argc, char** argv) {
  int repeats = argc > 1 ? std::atoi(argv[1]) : 3;
  return monotile::jit::run(std::max(1, repeats));
}
