// The copy benchmark kernel (dst = src, the harness's `copy_bytes{n}`) and the shapes of it the
// harness measures side by side: block size, warps per program, and the cache policy of its loads
// and stores. Every shape is specialized per size and unmasked, so every access is 16 bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dsl/ir.h"
#include "kernels/bench/bench_kernels.h"

namespace monotile::kernels::bench {

// The defaults are the exported copy: the fastest shape measured on the H200 (docs/perf.md).
struct CopyConfig {
  std::string label;  // "" for the exported `copy_bytes{n}`, else the variant's `__label`
  int num_warps = 16;
  int block = kCopyBlock;  // i32 elements one program moves: 16 x 16 bytes per thread at 16 warps
  dsl::CacheHint load_cache = dsl::CacheHint::kDefault;
  dsl::CacheHint store_cache = dsl::CacheHint::kDefault;
};

// dst = src over `bytes` bytes viewed as i32; bytes must be a multiple of 4 * config.block (throws
// dsl::Error otherwise). Parameters: src, dst (ptr<i32>). One program per block.
dsl::Program copy_program(int64_t bytes, const CopyConfig& config);
BenchKernel copy_kernel(int64_t bytes, const CopyConfig& config);

// The variants exported beside copy_bytes{n} as copy_bytes{n}__{label}.
std::vector<CopyConfig> copy_variants();

}  // namespace monotile::kernels::bench
