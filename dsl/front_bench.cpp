// Build-time costs of the front end: building, verifying, printing, simplifying and hashing the
// sample kernels (what a warm-up tool pays per kernel before any compile). Prints one line per
// program and stage with the median of repeated runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "dsl/printer.h"
#include "dsl/program_hash.h"
#include "dsl/simplify.h"
#include "dsl/test_programs.h"
#include "dsl/verifier.h"

namespace {

double median_us(const std::function<void()>& run, int repeats) {
  std::vector<double> times;
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    run();
    times.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

int count_ops(const monotile::dsl::Block& block) {
  int n = 0;
  for (const auto& op : block.ops) {
    ++n;
    for (const auto& region : op.regions) n += count_ops(region);
  }
  return n;
}

}  // namespace

int main() {
  using namespace monotile::dsl;
  constexpr int kRepeats = 51;
  std::printf("%-16s %6s %10s %10s %10s %10s %10s\n", "program", "ops", "build_us", "verify_us", "text_us",
              "simplify_us", "hash_us");
  for (const auto& sample : testing::sample_programs()) {
    Program program = sample.build();
    double build = median_us([&] { sample.build(); }, kRepeats);
    double check = median_us([&] { (void)verify(program); }, kRepeats);
    double text = median_us([&] { (void)to_text(program); }, kRepeats);
    double simple = median_us([&] { (void)simplify(program); }, kRepeats);
    double hash = median_us([&] { (void)program_hash(program); }, kRepeats);
    std::printf("%-16s %6d %10.1f %10.1f %10.1f %10.1f %10.1f\n", sample.name.c_str(), count_ops(program.body),
                build, check, text, simple, hash);
  }
  return 0;
}
