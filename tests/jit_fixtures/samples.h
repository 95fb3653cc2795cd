// The hand-written sample kernels: JIT test fixtures (builds with hand-written HIP/CUDA source, no
// DSL), which the JIT's, the cache's and the samples' own tests compile. Each returns a Build for a
// GPU target (sm_* or gfx*); the vendor text comes from spelling_<vendor>.cpp through an in-memory
// header, monotile_sample.h.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "dsl/target.h"
#include "jit/build.h"

namespace monotile::testing::samples {

// Threads per block of the elementwise, reduction and histogram samples.
inline constexpr int kBlockThreads = 256;
// Bins of the histogram sample (one per byte value).
inline constexpr int kHistogramBins = 256;

// c[i] = a[i] + b[i] (float), kernel "mt_vector_add(a, b, c, n)".
jit::Build vector_add(const dsl::Target& target);
// out[block] = sum of x over the block's grid-stride elements: warp shuffles then shared memory;
// kernel "mt_block_reduce(x, out, n)".
jit::Build block_reduce(const dsl::Target& target);
// bins[v] += count of bytes equal to v: shared-memory atomics then global atomics; kernel
// "mt_histogram(data, n, bins)".
jit::Build histogram(const dsl::Target& target);
// y[i] = bf16(alpha * x[i] + beta * y[i]) with bf16 a 16-bit struct rounded to nearest even;
// kernel "mt_bf16_axpby(x, y, alpha, beta, n)".
jit::Build bf16_axpby(const dsl::Target& target);
// The matrix unit: mma.sync m16n8k16 on NVIDIA, MFMA 32x32x8bf16_1k on AMD; kernel
// "mt_matrix_tile(a, b, c, m, n, k)", one warp per tile.
jit::Build matrix_tile(const dsl::Target& target);

// The in-memory header every sample includes: the vendor's spelling plus the shared bf16 helpers.
jit::Header prelude(const dsl::Target& target);

struct Sample {
  std::string_view name;
  std::string_view description;
  jit::Build (*make)(const dsl::Target& target);
};

// Every sample, in a stable order.
std::span<const Sample> samples();

// Every sample's build for `target`.
std::vector<jit::Build> sample_builds(const dsl::Target& target);

}  // namespace monotile::testing::samples
