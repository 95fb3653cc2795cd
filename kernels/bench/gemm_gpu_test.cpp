// The GEMM on the first GPU found: a small shape checked everywhere and the 4096^3 shape checked on
// a sample of outputs (two whole tiles plus random elements), each against a float64 reference on
// the host with C poisoned (NaN) before the launch; then a sweep of tile configurations at 4096^3
// prints time per launch and TFLOP/s (CUDA events around repeated launches). Skips without a GPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dsl/interp/float16.h"
#include "gtest/gtest.h"
#include "jit/jit.h"
#include "jit/program_build.h"
#include "jit/test_support.h"
#include "kernels/bench/gemm.h"
#include "runtime/discovery.h"
#include "runtime/kernel.h"
#include "tests/testing/compare.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::bench {
namespace {

using dsl::interp::bf16_bits_from_double;
using dsl::interp::bf16_bits_to_double;
using runtime::KernelArgument;

class GemmOnGpu : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    runtime::DiscoveryOptions options;
    options.include_cpu = false;
    runtime::Discovery discovery = runtime::discover_devices(options);
    if (discovery.devices.empty()) {
      skip_reason_ = new std::string("no GPU");
      for (const runtime::MissingBackend& missing : discovery.missing) *skip_reason_ += "; " + missing.reason;
      return;
    }
    device_ = discovery.devices[0].release();
    dir_ = new jit::testing::TempDir();
    jit_ = new jit::Jit(jit::testing::config_in(dir_->path()));
  }

  void SetUp() override {
    if (device_ == nullptr) GTEST_SKIP() << *skip_reason_;
    stream_ = std::make_unique<runtime::Stream>(*device_->create_stream());
  }

  std::unique_ptr<runtime::Kernel> load(const BenchKernel& kernel) {
    absl::StatusOr<jit::ProgramBuild> made = jit::make_build(kernel.program, device_->info().target);
    EXPECT_TRUE(made.ok()) << made.status();
    if (!made.ok()) return nullptr;
    absl::StatusOr<jit::CompiledBuild> compiled = jit_->compile_build(made->build);
    EXPECT_TRUE(compiled.ok()) << compiled.status();
    if (!compiled.ok()) return nullptr;
    absl::StatusOr<runtime::Kernel> loaded = runtime::Kernel::load(*device_, *compiled, made->params);
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (!loaded.ok()) return nullptr;
    return std::make_unique<runtime::Kernel>(*std::move(loaded));
  }

  runtime::DeviceBuffer upload(const std::vector<uint16_t>& host) {
    runtime::DeviceBuffer buffer = *device_->allocate(host.size() * 2);
    EXPECT_TRUE(device_->copy_to_device(buffer.address(), host.data(), host.size() * 2).ok());
    return buffer;
  }

  absl::Status launch(runtime::Kernel& loaded, const BenchKernel& kernel, const runtime::DeviceBuffer& a,
                      const runtime::DeviceBuffer& b, const runtime::DeviceBuffer& c) {
    auto pointer = [](const runtime::DeviceBuffer& buffer) {
      return KernelArgument::pointer(reinterpret_cast<const void*>(buffer.address()), dsl::ScalarType::kBf16);
    };
    std::vector<KernelArgument> args = {pointer(a), pointer(b), pointer(c)};
    return loaded.launch({static_cast<uint32_t>(kernel.grid[0]), static_cast<uint32_t>(kernel.grid[1]), 1}, args,
                         *stream_);
  }

  // Runs C = A B^T once on fresh inputs and checks `samples` outputs (every output when 0) and the
  // first and last tiles whole.
  void check(int m, int n, int k, const GemmConfig& tiles, int samples) {
    SCOPED_TRACE("gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " +
                 (tiles.label.empty() ? "default" : tiles.label) + " tiles " +
                 std::to_string(tiles.block_m) + "x" + std::to_string(tiles.block_n) + "x" +
                 std::to_string(tiles.block_k) + " warps " + std::to_string(tiles.num_warps));
    BenchKernel kernel = gemm_kernel(m, n, k, tiles);
    std::unique_ptr<runtime::Kernel> loaded = load(kernel);
    ASSERT_NE(loaded, nullptr);
    std::normal_distribution<double> dist(0.0, 1.0);
    std::vector<uint16_t> a(size_t(m) * k), b(size_t(n) * k), c(size_t(m) * n, 0xFFFF);
    for (uint16_t& v : a) v = bf16_bits_from_double(dist(random_));
    for (uint16_t& v : b) v = bf16_bits_from_double(dist(random_));
    runtime::DeviceBuffer ab = upload(a), bb = upload(b), cb = upload(c);
    absl::Status status = launch(*loaded, kernel, ab, bb, cb);
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_TRUE(device_->synchronize(*stream_).ok());
    ASSERT_TRUE(device_->copy_to_host(c.data(), cb.address(), c.size() * 2).ok());
    std::vector<std::pair<int, int>> points;
    for (int corner : {0, 1}) {
      int r0 = corner ? m - tiles.block_m : 0, c0 = corner ? n - tiles.block_n : 0;
      for (int i = 0; i < tiles.block_m; ++i) {
        for (int j = 0; j < tiles.block_n; ++j) points.emplace_back(r0 + i, c0 + j);
      }
    }
    if (samples == 0) {
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) points.emplace_back(i, j);
      }
    }
    for (int s = 0; s < samples; ++s) points.emplace_back(int(random_() % m), int(random_() % n));
    int wrong = 0;
    for (auto [i, j] : points) {
      double ref = 0, magnitude = 0;
      for (int l = 0; l < k; ++l) {
        double p = bf16_bits_to_double(a[size_t(i) * k + l]) * bf16_bits_to_double(b[size_t(j) * k + l]);
        ref += p;
        magnitude += std::abs(p);
      }
      double got = bf16_bits_to_double(c[size_t(i) * n + j]);
      if (!monotile::testing::agrees(got, ref, {1e-5 * magnitude, 1.0 / 128})) {
        if (++wrong <= 5) ADD_FAILURE() << "c[" << i << ", " << j << "] = " << got << ", expected " << ref;
      }
    }
    EXPECT_EQ(wrong, 0) << "of " << points.size() << " checked";
  }

  // Median time per launch over a few timed batches (inputs fixed; they stay mostly in L2 only at
  // small shapes, which this is not used for).
  double time_us(int m, int n, int k, const GemmConfig& tiles) {
    BenchKernel kernel = gemm_kernel(m, n, k, tiles);
    std::unique_ptr<runtime::Kernel> loaded = load(kernel);
    if (loaded == nullptr) return -1;
    std::vector<uint16_t> a(size_t(m) * k, 0x3f80), b(size_t(n) * k, 0x3f80), c(size_t(m) * n, 0);
    runtime::DeviceBuffer ab = upload(a), bb = upload(b), cb = upload(c);
    runtime::Event start = *device_->create_event(), end = *device_->create_event();
    const int launches = 20;
    std::vector<double> times;
    for (int batch = 0; batch < 6; ++batch) {
      EXPECT_TRUE(device_->record(start, *stream_).ok());
      for (int i = 0; i < launches; ++i) EXPECT_TRUE(launch(*loaded, kernel, ab, bb, cb).ok());
      EXPECT_TRUE(device_->record(end, *stream_).ok());
      EXPECT_TRUE(device_->synchronize(end).ok());
      if (batch > 0) times.push_back(*device_->elapsed_ms(start, end) * 1000.0 / launches);
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
  }

  static runtime::Device* device_;
  static std::string* skip_reason_;
  static jit::testing::TempDir* dir_;
  static jit::Jit* jit_;
  std::unique_ptr<runtime::Stream> stream_;
  std::mt19937 random_ = monotile::testing::case_rng();
};

runtime::Device* GemmOnGpu::device_ = nullptr;
std::string* GemmOnGpu::skip_reason_ = nullptr;
jit::testing::TempDir* GemmOnGpu::dir_ = nullptr;
jit::Jit* GemmOnGpu::jit_ = nullptr;

TEST_F(GemmOnGpu, SmallShapesMatchFloat64Everywhere) {
  check(64, 96, 48, {.block_m = 32, .block_n = 32, .block_k = 16, .group_m = 2, .num_warps = 4}, 0);
  check(256, 512, 128, {}, 0);
  check(256, 512, 128, {.mma = dsl::MmaKind::kWarp}, 0);
  check(384, 256, 96, {.block_m = 128, .block_n = 128, .block_k = 32, .group_m = 2, .num_warps = 4}, 0);
}

TEST_F(GemmOnGpu, Gemm4096MatchesFloat64OnSamples) { check(4096, 4096, 4096, {}, 4096); }

// wgmma: two warpgroups of one instruction per K step, one warpgroup of two, two warpgroups of two,
// each output checked; waiting in each iteration (the exported size on samples); three stages.
TEST_F(GemmOnGpu, WarpgroupMmaMatchesFloat64) {
  check(256, 512, 128, {.mma = dsl::MmaKind::kWarpgroup}, 0);
  check(384, 256, 192, {.block_m = 128, .block_n = 128, .block_k = 64, .group_m = 2, .num_warps = 4,
                        .mma = dsl::MmaKind::kWarpgroup}, 0);
  check(512, 256, 128, {.block_m = 256, .block_n = 128, .block_k = 64, .group_m = 2, .num_warps = 8,
                        .mma = dsl::MmaKind::kWarpgroup}, 0);
  check(4096, 4096, 4096, {.mma = dsl::MmaKind::kWarpgroupSerial}, 4096);
  check(256, 512, 128, {.mma = dsl::MmaKind::kWarpgroupSerial}, 0);
  check(256, 512, 512, {.num_stages = 3, .mma = dsl::MmaKind::kWarpgroup}, 0);
}

// Prints time and TFLOP/s per configuration at 4096^3: the exported one, then each variant.
TEST_F(GemmOnGpu, VariantSweep4096) {
  const int size = 4096;
  std::vector<GemmConfig> configs = {GemmConfig{}};
  for (const GemmConfig& config : gemm_variants()) configs.push_back(config);
  for (const GemmConfig& config : configs) {
    check(size, size, size, config, 256);
    double us = time_us(size, size, size, config);
    std::printf("gemm 4096^3 %s (tiles %dx%dx%d warps %d): %.1f us, %.1f TFLOP/s\n",
                config.label.empty() ? "default" : config.label.c_str(), config.block_m, config.block_n,
                config.block_k, config.num_warps, us, 2.0 * size * size * size / (us * 1e-6) / 1e12);
  }
}

}  // namespace
}  // namespace monotile::kernels::bench
