// dsl_lower_bench: host time of lower() per sample program and target, and the source size.
// Usage: dsl_lower_bench [repetitions]   (default 20)
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "dsl/lower/lower.h"
#include "dsl/test_programs.h"

int main(int argc, char** argv) {
  using namespace monotile::dsl;
  int repetitions = argc > 1 ? std::atoi(argv[1]) : 20;
  if (repetitions < 1) repetitions = 1;
  std::printf("%-16s %-7s %10s %10s %8s %8s\n", "program", "target", "lower ms", "source B", "threads", "smem B");
  for (const auto& sample : testing::sample_programs()) {
    Program program = sample.build();
    for (const char* text : {"sm_90a", "gfx90a"}) {
      Target target = Target::parse(text).value();
      auto start = std::chrono::steady_clock::now();
      absl::StatusOr<lower::LoweredKernel> kernel;
      for (int i = 0; i < repetitions; ++i) kernel = lower::lower(program, target);
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() /
                  repetitions;
      if (!kernel.ok()) {
        std::printf("%-16s %-7s failed: %s\n", sample.name.c_str(), text, std::string(kernel.status().message()).c_str());
        return 1;
      }
      std::printf("%-16s %-7s %10.2f %10zu %8d %8lld\n", sample.name.c_str(), text, ms, kernel->source.size(),
                  kernel->block_threads, static_cast<long long>(kernel->dynamic_shared_bytes));
    }
  }
  return 0;
}
