// The copy kernel and its variants. Each program moves `block` i32 with one load op and one store
// op: the lowering issues all of a thread's 16-byte loads before its first store. The persistent
// version walks blocks program_id, program_id + programs, ...; with `prefetch` the loop carries
// the next block's data, loaded before the current one is stored (the last step reloads its own
// block instead of reading past the end, so nothing needs a mask).
#include "kernels/bench/copy.h"

#include <algorithm>
#include <source_location>
#include <string>

#include "dsl/dsl.h"

namespace monotile::kernels::bench {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

std::string copy_name(int64_t bytes, const CopyConfig& config) {
  return "copy_bytes" + std::to_string(bytes) + (config.label.empty() ? "" : "__" + config.label);
}

int64_t block_count(int64_t bytes, const CopyConfig& config) { return bytes / 4 / config.block; }

}  // namespace

Program copy_program(int64_t bytes, const CopyConfig& config) {
  const int64_t blocks = block_count(bytes, config);
  if (bytes <= 0 || bytes % (int64_t{4} * config.block) != 0) {
    const std::string expected = "a positive multiple of 4 x block = " + std::to_string(4 * config.block) + " bytes";
    const std::string actual = std::to_string(bytes) + " bytes";
    throw Error(SourceLoc::from(std::source_location::current()), "copy_program",
                "the size does not divide into blocks: expected " + expected + ", got " + actual, expected, actual,
                "pick a block that divides the size");
  }
  Builder b(copy_name(bytes, config), {.num_warps = config.num_warps});
  auto src = b.arg("src", ptr(i32)), dst = b.arg("dst", ptr(i32));
  const AccessOptions load_options{.cache = config.streaming ? Cache::streaming : Cache::normal};
  const AccessOptions store_options{.cache = config.streaming ? Cache::streaming : Cache::normal};
  auto lanes = arange(0, config.block);
  // Offsets in i64: a persistent program's block index times the block can pass 2^31 elements.
  auto offsets = [&](Value block) { return block.to(i64) * config.block + lanes; };
  if (config.programs == 0) {
    auto offs = offsets(program_id(0));
    store(dst + offs, load(src + offs, load_options), store_options);
  } else if (!config.prefetch) {
    range(program_id(0), int(blocks), num_programs(0), [&](Value block) {
      auto offs = offsets(block);
      store(dst + offs, load(src + offs, load_options), store_options);
    });
  } else {
    auto first = load(src + offsets(program_id(0)), load_options);
    range(program_id(0), int(blocks), num_programs(0), first, [&](Value block, Value data) {
      auto next = minimum(block + num_programs(0), int(blocks - 1));
      auto ahead = load(src + offsets(next), load_options);
      store(dst + offsets(block), data, store_options);
      return ahead;
    });
  }
  return b.finish();
}

BenchKernel copy_kernel(int64_t bytes, const CopyConfig& config) {
  const int64_t blocks = block_count(bytes, config);
  BenchKernel kernel;
  kernel.program = copy_program(bytes, config);
  kernel.grid = {static_cast<int>(config.programs == 0 ? blocks : std::min<int64_t>(config.programs, blocks)), 1, 1};
  return kernel;
}

Program copy_program(int64_t bytes) { return copy_program(bytes, {}); }

BenchKernel copy_kernel(int64_t bytes) { return copy_kernel(bytes, {}); }

std::vector<CopyConfig> copy_variants() {
  // Persistent grids in programs of 4 warps per SM of the H200 (132 SMs): 8 fill an SM (2048
  // threads, 256 KiB of loads in flight); 2 keep 32 KiB in flight, about what 4 TB/s at ~1 us of
  // latency needs (Little's law), with less contention for the memory queues.
  constexpr int kSms = 132;
  return {
      {.label = "nohint", .streaming = false},
      {.label = "w4_b2048", .block = 2048},
      {.label = "w8_b8192", .num_warps = 8, .block = 8192},
      {.label = "w4_b16384", .block = 16384},
      {.label = "w8_b16384_nohint", .num_warps = 8, .block = 16384, .streaming = false},
      {.label = "persist", .programs = 8 * kSms},
      {.label = "persist_prefetch", .programs = 8 * kSms, .prefetch = true},
      {.label = "persist_p4", .programs = 4 * kSms},
      {.label = "persist_p2_prefetch", .programs = 2 * kSms, .prefetch = true},
  };
}

}  // namespace monotile::kernels::bench
