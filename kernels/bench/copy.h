// The copy benchmark kernel (dst = src, the harness's `copy_bytes{n}`) and the shapes of it the
// harness measures side by side: block size, warps, cache hints, and a persistent grid-stride
// version. Every shape is specialized per size and unmasked, so every access is 16 bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dsl/ir.h"
#include "kernels/bench/bench_kernels.h"

namespace monotile::kernels::bench {

struct CopyConfig {
  std::string label;         // "" for the exported `copy_bytes{n}`, else the variant's `__label`
  int num_warps = 4;
  int block = kCopyBlock;    // i32 elements one program (one loop step, when persistent) moves
  bool streaming = true;     // .cs (evict-first) loads and stores instead of the default policy
  int programs = 0;          // 0: one program per block; else a grid-stride loop over this many
  bool prefetch = false;     // persistent only: the next block is loaded before this one is stored
};

// dst = src over `bytes` bytes viewed as i32; bytes must be a multiple of 4 * config.block (throws
// dsl::Error otherwise). Parameters: src, dst (ptr<i32>).
dsl::Program copy_program(int64_t bytes, const CopyConfig& config);
BenchKernel copy_kernel(int64_t bytes, const CopyConfig& config);

// The variants exported beside copy_bytes{n} as copy_bytes{n}__{label}.
std::vector<CopyConfig> copy_variants();

}  // namespace monotile::kernels::bench
