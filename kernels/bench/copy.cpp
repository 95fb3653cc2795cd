// The copy kernel and its variants. Each program moves `block` i32 with one load op and one store
// op: the lowering issues all of a thread's 16-byte loads before its first store.
//
// Measured on the H200 (docs/perf.md, GPU run of 2026-12-02), 64 MiB / 1 GiB against the driver's
// copy at 33.5 / 513.5 us: the default cache policy beats evict-first (.cs) loads and stores by 4%
// (36.6 -> 35.3 / 552 -> 529 us at 4 warps x 16 KiB); 8 warps x 64 KiB blocks gain another 1% at
// 1 GiB (524.5 us), 16 warps x 128 KiB 1% more (517.5 against 522.7 us; 35.07 against 35.33 at
// 64 MiB, where every block shape measured 35.1-35.4 us); persistent grid-stride versions (2, 4 or 8 programs per SM, with or without the
// next block loaded before the current one is stored) were 3-16% slower than one program per block.
#include "kernels/bench/copy.h"

#include "support/source_location.h"
#include <string>

#include "dsl/dsl.h"

namespace monotile::kernels::bench {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

Program copy_program(int64_t bytes, const CopyConfig& config) {
  if (bytes <= 0 || bytes % (int64_t{4} * config.block) != 0) {
    const std::string expected = "a positive multiple of 4 x block = " + std::to_string(4 * config.block) + " bytes";
    const std::string actual = std::to_string(bytes) + " bytes";
    throw Error(SourceLoc::from(SourceLocation::current()), "copy_program",
                "the size does not divide into blocks: expected " + expected + ", got " + actual, expected, actual,
                "pick a block that divides the size");
  }
  Builder b("copy_bytes" + std::to_string(bytes) + (config.label.empty() ? "" : "__" + config.label),
            {.num_warps = config.num_warps});
  auto src = b.arg("src", ptr(i32)), dst = b.arg("dst", ptr(i32));
  // i64 offsets: a 1 GiB copy has 2^28 elements, and the product must not wrap for larger ones.
  auto offs = program_id(0).to(i64) * config.block + arange(0, config.block);
  store(dst + offs, load(src + offs, {.cache = config.load_cache}), {.cache = config.store_cache});
  return b.finish();
}

BenchKernel copy_kernel(int64_t bytes, const CopyConfig& config) {
  BenchKernel kernel;
  kernel.program = copy_program(bytes, config);
  kernel.grid = {static_cast<int>(bytes / 4 / config.block), 1, 1};
  return kernel;
}

Program copy_program(int64_t bytes) { return copy_program(bytes, {}); }

BenchKernel copy_kernel(int64_t bytes) { return copy_kernel(bytes, {}); }

std::vector<CopyConfig> copy_variants() {
  constexpr CacheHint kStreaming = CacheHint::kStreaming;
  return {
      {.label = "w4_b4096_cs", .num_warps = 4, .block = 4096, .load_cache = kStreaming, .store_cache = kStreaming},
      {.label = "w4_b4096", .num_warps = 4, .block = 4096},
      {.label = "w8_b32768", .block = 32768},
      {.label = "w8_b16384", .num_warps = 8, .block = 16384},
      // 8 x 16 bytes per thread, as w4_b4096: twice the default's programs (a smaller last wave at
      // 64 MiB), or as many with twice the threads.
      {.label = "w8_b8192", .num_warps = 8, .block = 8192},
      {.label = "w16_b16384", .num_warps = 16, .block = 16384},
      {.label = "ld_cs", .load_cache = kStreaming},
      {.label = "st_cs", .store_cache = kStreaming},
      {.label = "ld_cg", .load_cache = CacheHint::kCacheGlobal},
  };
}

}  // namespace monotile::kernels::bench
