// The vendor-neutral sample kernels, written against the prelude's macros; MT_WARP_SIZE comes from
// the Target, never a literal.
#include "tests/jit_fixtures/samples.h"

#include "absl/strings/str_cat.h"
#include "tests/jit_fixtures/spelling.h"
#include "support/check.h"

namespace monotile::testing::samples {
namespace {

constexpr std::string_view kGeneratorVersion = "samples-1";

// bf16 as a 16-bit struct: hiprtc 5.2 has no bf16 type, and one spelling serves both vendors.
constexpr char kBf16[] = R"(
typedef unsigned short mt_u16;
struct mt_bf16 { mt_u16 bits; };
__device__ inline float mt_bf16_to_float(mt_bf16 x) { return __uint_as_float(((unsigned)x.bits) << 16); }
// Round to nearest, ties to even; NaN stays a (quiet) NaN.
__device__ inline mt_bf16 mt_float_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  mt_bf16 out;
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    out.bits = (mt_u16)((u >> 16) | 0x40u);
  } else {
    out.bits = (mt_u16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  return out;
}
)";

bool is_nvidia(const dsl::Target& target) { return target.vendor() == dsl::Vendor::kNvidia; }

jit::Build make(std::string_view name, std::string_view kernel, std::string source, const dsl::Target& target,
                int threads) {
  MT_CHECK(target.vendor() != dsl::Vendor::kCpu, "sample kernels are for GPU targets");
  jit::Build build(std::string(name), std::string(kernel), std::move(source), target);
  build.headers.push_back(prelude(target));
  build.generator_version = std::string(kGeneratorVersion);
  build.launch.block_x = threads;
  return build;
}

std::string block_define() { return absl::StrCat("#define MT_BLOCK ", kBlockThreads, "\n"); }

}  // namespace

jit::Header prelude(const dsl::Target& target) {
  std::string text = absl::StrCat(
      "#pragma once\n", is_nvidia(target) ? cuda_spelling(target) : hip_spelling(target), kBf16);
  return {"monotile_sample.h", std::move(text)};
}

jit::Build vector_add(const dsl::Target& target) {
  return make("vector_add", "mt_vector_add",
              absl::StrCat(R"(#include "monotile_sample.h"
)",
                           block_define(), R"(
MT_KERNEL void __launch_bounds__(MT_BLOCK) mt_vector_add(const float* __restrict__ a,
    const float* __restrict__ b, float* __restrict__ c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)"),
              target, kBlockThreads);
}

jit::Build block_reduce(const dsl::Target& target) {
  return make("block_reduce", "mt_block_reduce",
              absl::StrCat(R"(#include "monotile_sample.h"
)",
                           block_define(), R"(
#define MT_WARPS (MT_BLOCK / MT_WARP_SIZE)

__device__ inline float mt_warp_sum(float v) {
  for (int offset = MT_WARP_SIZE / 2; offset > 0; offset /= 2) v += MT_SHFL_XOR(v, offset);
  return v;
}

MT_KERNEL void __launch_bounds__(MT_BLOCK) mt_block_reduce(const float* __restrict__ x,
    float* __restrict__ out, int n) {
  __shared__ float partial[MT_WARPS];
  float v = 0.0f;
  for (int i = blockIdx.x * MT_BLOCK + threadIdx.x; i < n; i += gridDim.x * MT_BLOCK) v += x[i];
  v = mt_warp_sum(v);
  const int lane = threadIdx.x % MT_WARP_SIZE, warp = threadIdx.x / MT_WARP_SIZE;
  if (lane == 0) partial[warp] = v;
  MT_BARRIER();
  if (warp == 0) {
    v = mt_warp_sum(lane < MT_WARPS ? partial[lane] : 0.0f);
    if (lane == 0) out[blockIdx.x] = v;
  }
}
)"),
              target, kBlockThreads);
}

jit::Build histogram(const dsl::Target& target) {
  return make("histogram", "mt_histogram", absl::StrCat(R"(#include "monotile_sample.h"
)", block_define(), "#define MT_BINS ", kHistogramBins, "\n", R"(
MT_KERNEL void __launch_bounds__(MT_BLOCK) mt_histogram(const unsigned char* __restrict__ data, int n,
    unsigned int* __restrict__ bins) {
  __shared__ unsigned int local[MT_BINS];
  for (int b = threadIdx.x; b < MT_BINS; b += MT_BLOCK) local[b] = 0u;
  MT_BARRIER();
  for (int i = blockIdx.x * MT_BLOCK + threadIdx.x; i < n; i += gridDim.x * MT_BLOCK) {
    MT_ATOMIC_ADD(&local[data[i]], 1u);
  }
  MT_BARRIER();
  for (int b = threadIdx.x; b < MT_BINS; b += MT_BLOCK) {
    if (local[b] != 0u) MT_ATOMIC_ADD(&bins[b], local[b]);
  }
}
)"), target, kBlockThreads);
}

jit::Build bf16_axpby(const dsl::Target& target) {
  return make("bf16_axpby", "mt_bf16_axpby", absl::StrCat(R"(#include "monotile_sample.h"
)", block_define(), R"(
MT_KERNEL void __launch_bounds__(MT_BLOCK) mt_bf16_axpby(const mt_bf16* __restrict__ x,
    mt_bf16* __restrict__ y, float alpha, float beta, int n) {
  int i = blockIdx.x * MT_BLOCK + threadIdx.x;
  if (i < n) y[i] = mt_float_to_bf16(alpha * mt_bf16_to_float(x[i]) + beta * mt_bf16_to_float(y[i]));
}
)"), target, kBlockThreads);
}

jit::Build matrix_tile(const dsl::Target& target) {
  return make("matrix_tile", "mt_matrix_tile", is_nvidia(target) ? cuda_matrix_source() : hip_matrix_source(),
              target, target.warp_size());
}

namespace {

constexpr Sample kSamples[] = {
    {"vector_add", "elementwise float add", vector_add},
    {"block_reduce", "block sum: warp shuffles and shared memory", block_reduce},
    {"histogram", "256-bin byte histogram: shared and global atomics", histogram},
    {"bf16_axpby", "bf16 axpby, round to nearest even", bf16_axpby},
    {"matrix_tile", "bf16 matrix tile on the matrix unit (mma.sync / MFMA)", matrix_tile},
};

}  // namespace

std::span<const Sample> samples() { return kSamples; }

std::vector<jit::Build> sample_builds(const dsl::Target& target) {
  std::vector<jit::Build> builds;
  for (const Sample& sample : kSamples) builds.push_back(sample.make(target));
  return builds;
}

}  // namespace monotile::testing::samples
