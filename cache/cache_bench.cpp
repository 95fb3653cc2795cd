// cache_bench: per-operation latency of the kernel cache: a hit (lookup: open, read, verify,
// count) of a 64 KiB and a 1 MiB entry, a miss, a store, and the parts of a hit on their own.
// Prints the median and 90th percentile of many repeats, in microseconds.
// Usage: cache_bench [--dir DIR] [--repeats N]  (DIR defaults to a fresh folder under /tmp).
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "cache/entry_format.h"
#include "cache/file_io.h"
#include "cache/filesystem_kind.h"
#include "cache/layout.h"

namespace monotile::cache {
namespace {

struct Timing {
  double median_us = 0;
  double p90_us = 0;
};

Timing measure(int repeats, const std::function<void(int)>& operation) {
  for (int i = 0; i < std::min(repeats / 10 + 1, 20); ++i) operation(i);  // warm the page cache
  std::vector<double> samples;
  samples.reserve(repeats);
  for (int i = 0; i < repeats; ++i) {
    auto start = std::chrono::steady_clock::now();
    operation(i);
    samples.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(samples.begin(), samples.end());
  return Timing{samples[samples.size() / 2], samples[samples.size() * 9 / 10]};
}

Entry entry_of_size(size_t size) {
  Entry entry;
  entry.code_object.resize(size);
  for (size_t i = 0; i < size; ++i) entry.code_object[i] = static_cast<char>(i * 131 + (i >> 9));
  entry.resource_report = "registers 96, spills 0, shared 49152, scratch 0";
  entry.compile_log = "ptxas info    : Used 96 registers, used 1 barriers, 49152 bytes smem";
  entry.metadata = {{"kernel", "bench_kernel"}, {"target", "sm_90a"}};
  return entry;
}

KeyBuilder key_for(const std::string& name) {
  KeyBuilder builder;
  builder.add("lowering", "bench").add("source", std::string(20000, 's') + name).add("target", "sm_90a");
  return builder;
}

void print(const char* operation, const Timing& timing) {
  std::printf("| %-48s | %10.1f | %10.1f |\n", operation, timing.median_us, timing.p90_us);
}

int run(int argc, char** argv) {
  std::filesystem::path dir;
  int repeats = 2000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--dir") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else if (std::strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
      repeats = std::max(10, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: cache_bench [--dir DIR] [--repeats N]\n");
      return 2;
    }
  }
  bool temporary = dir.empty();
  if (temporary) {
    char pattern[] = "/tmp/monotile-cache-bench-XXXXXX";
    dir = mkdtemp(pattern);
  }
  Config config;
  config.writable_dir = dir;
  auto cache = Cache::open(config);
  if (!cache->writable()) return 1;
  std::printf("cache directory %s (%s), %d repeats\n\n", dir.c_str(), filesystem_kind(dir).name.c_str(), repeats);
  std::printf("| %-48s | %10s | %10s |\n", "operation", "median us", "p90 us");
  std::printf("|%s|%s|%s|\n", std::string(50, '-').c_str(), std::string(12, '-').c_str(), std::string(12, '-').c_str());

  for (size_t size : {size_t{64} << 10, size_t{1} << 20}) {
    KeyBuilder key = key_for(std::to_string(size));
    Entry entry = entry_of_size(size);
    if (!cache->store(key, entry).ok()) return 1;
    std::string label = size == (size_t{64} << 10) ? "64 KiB" : "1 MiB";
    size_t sink = 0;
    print(("hit " + label + ": lookup (open, read, verify, count)").c_str(), measure(repeats, [&](int) {
            sink += cache->lookup(key)->code_object.size();
          }));
    print(("hit " + label + ": get_or_compute").c_str(), measure(repeats, [&](int) {
            sink += cache->get_or_compute(key, [] { return absl::StatusOr<Entry>(Entry{}); })->code_object.size();
          }));
    std::filesystem::path path = Layout(dir).entry_path(key.key());
    print(("  part: read whole file " + label).c_str(), measure(repeats, [&](int) {
            sink += read_whole_file(path)->size();
          }));
    std::string bytes = *read_whole_file(path);
    print(("  part: verify + parse " + label).c_str(), measure(repeats, [&](int) {
            sink += parse_entry(bytes)->entry.code_object.size();
          }));
    print("  part: touch (LRU; at most once a minute)", measure(repeats, [&](int) {
            sink += touch_file(path).ok();
          }));
    print("  part: key of a 20 KB preimage", measure(repeats, [&](int) { sink += key.key().low & 1; }));
    if (sink == 0) std::printf("(unreachable)\n");
  }
  print("miss: lookup of an absent key", measure(repeats, [&](int i) {
          if (cache->lookup(key_for("absent" + std::to_string(i)))) std::abort();
        }));
  int stores = std::max(repeats / 20, 20);
  print("store 64 KiB (write, fsync, rename, fsync dir)", measure(stores, [&](int i) {
          if (!cache->store(key_for("store" + std::to_string(i) + "-" + std::to_string(rand())),
                            entry_of_size(64 << 10)).ok()) {
            std::abort();
          }
        }));
  if (temporary) std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace monotile::cache

int main(int argc, char** argv) { return monotile::cache::run(argc, argv); }
