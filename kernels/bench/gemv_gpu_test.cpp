// The decode GEMV on the first GPU found, at the harness's real shapes: each kernel is launched twice
// on one workspace with fresh random x and W (y poisoned with NaN before each launch) and checked
// against a float64 reference on the host; split-K counters must be zero after each launch. A
// timing sweep prints each configuration's time per launch (CUDA events around many launches
// rotating through more weight copies than the L2 holds). Without a GPU every test skips.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dsl/interp/float16.h"
#include "gtest/gtest.h"
#include "jit/jit.h"
#include "jit/program_build.h"
#include "jit/test_support.h"
#include "kernels/bench/gemv.h"
#include "runtime/discovery.h"
#include "runtime/kernel.h"
#include "tests/testing/compare.h"
#include "tests/testing/seed.h"

namespace monotile::kernels::bench {
namespace {

using dsl::interp::bf16_bits_from_double;
using dsl::interp::bf16_bits_to_double;
using runtime::KernelArgument;

class GemvOnGpu : public ::testing::Test {
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

  // Compiles and loads `kernel`; the error when it cannot.
  absl::StatusOr<std::unique_ptr<runtime::Kernel>> try_load(const BenchKernel& kernel) {
    absl::StatusOr<jit::ProgramBuild> made = jit::make_build(kernel.program, device_->info().target);
    if (!made.ok()) return made.status();
    absl::StatusOr<jit::CompiledBuild> compiled = jit_->compile_build(made->build);
    if (!compiled.ok()) return compiled.status();
    absl::StatusOr<runtime::Kernel> loaded = runtime::Kernel::load(*device_, *compiled, made->params);
    if (!loaded.ok()) return loaded.status();
    return std::make_unique<runtime::Kernel>(*std::move(loaded));
  }

  std::unique_ptr<runtime::Kernel> load(const BenchKernel& kernel) {
    absl::StatusOr<std::unique_ptr<runtime::Kernel>> loaded = try_load(kernel);
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    return loaded.ok() ? *std::move(loaded) : nullptr;
  }

  runtime::DeviceBuffer allocate(size_t bytes, uint8_t fill) {
    runtime::DeviceBuffer buffer = *device_->allocate(std::max<size_t>(bytes, 16));
    EXPECT_TRUE(device_->fill_bytes(buffer.address(), fill, buffer.size()).ok());
    return buffer;
  }

  static std::vector<KernelArgument> arguments(const BenchKernel& kernel, runtime::DevicePtr x, runtime::DevicePtr w,
                                               runtime::DevicePtr y, const std::vector<runtime::DeviceBuffer>& spaces) {
    auto pointer = [](runtime::DevicePtr address, dsl::ScalarType type) {
      return KernelArgument::pointer(reinterpret_cast<const void*>(address), type);
    };
    std::vector<KernelArgument> args = {pointer(x, dsl::ScalarType::kBf16), pointer(w, dsl::ScalarType::kBf16),
                                        pointer(y, dsl::ScalarType::kBf16)};
    for (size_t i = 0; i < kernel.workspaces.size(); ++i) {
      args.push_back(pointer(spaces[i].address(), kernel.workspaces[i].name == kGemvCounters ? dsl::ScalarType::kI32
                                                                                              : dsl::ScalarType::kF32));
    }
    return args;
  }

  std::vector<runtime::DeviceBuffer> workspaces(const BenchKernel& kernel) {
    std::vector<runtime::DeviceBuffer> spaces;
    for (const BenchWorkspace& workspace : kernel.workspaces) spaces.push_back(allocate(workspace.bytes, 0));
    return spaces;
  }

  // Launches `kernel` twice on fresh inputs and checks y against float64 each time.
  void check(int m, int n, int k, const GemvConfig& config) {
    SCOPED_TRACE("gemv m " + std::to_string(m) + " k " + std::to_string(k) + " n " + std::to_string(n) + " splits " +
                 std::to_string(config.splits));
    BenchKernel kernel = gemv_kernel(m, n, k, config);
    std::unique_ptr<runtime::Kernel> loaded = load(kernel);
    ASSERT_NE(loaded, nullptr);
    std::vector<runtime::DeviceBuffer> spaces = workspaces(kernel);
    std::normal_distribution<double> dist(0.0, 1.0);
    for (int launch = 0; launch < 2; ++launch) {
      SCOPED_TRACE("launch " + std::to_string(launch));
      std::vector<uint16_t> x(size_t(m) * k), w(size_t(n) * k);
      for (uint16_t& v : x) v = bf16_bits_from_double(dist(random_));
      for (uint16_t& v : w) v = bf16_bits_from_double(dist(random_));
      runtime::DeviceBuffer xb = allocate(x.size() * 2, 0), wb = allocate(w.size() * 2, 0);
      runtime::DeviceBuffer yb = allocate(size_t(m) * n * 2, 0xFF);  // 0xFFFF: a bf16 NaN
      ASSERT_TRUE(device_->copy_to_device(xb.address(), x.data(), x.size() * 2).ok());
      ASSERT_TRUE(device_->copy_to_device(wb.address(), w.data(), w.size() * 2).ok());
      absl::Status status = loaded->launch({static_cast<uint32_t>(kernel.grid[0]), static_cast<uint32_t>(kernel.grid[1]), 1},
                                           arguments(kernel, xb.address(), wb.address(), yb.address(), spaces), *stream_);
      ASSERT_TRUE(status.ok()) << status;
      ASSERT_TRUE(device_->synchronize(*stream_).ok());
      std::vector<uint16_t> y(size_t(m) * n);
      ASSERT_TRUE(device_->copy_to_host(y.data(), yb.address(), y.size() * 2).ok());
      std::vector<double> xd(x.size()), wd(w.size());
      for (size_t i = 0; i < x.size(); ++i) xd[i] = bf16_bits_to_double(x[i]);
      for (size_t i = 0; i < w.size(); ++i) wd[i] = bf16_bits_to_double(w[i]);
      int wrong = 0;
      double err2 = 0, ref2 = 0;
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          double ref = 0, magnitude = 0;
          for (int l = 0; l < k; ++l) {
            double p = xd[size_t(i) * k + l] * wd[size_t(j) * k + l];
            ref += p;
            magnitude += std::abs(p);
          }
          double got = bf16_bits_to_double(y[size_t(i) * n + j]);
          err2 += (got - ref) * (got - ref);
          ref2 += ref * ref;
          if (!monotile::testing::agrees(got, ref, {1e-6 * magnitude, 1.0 / 128})) {
            if (++wrong <= 5) ADD_FAILURE() << "y[" << i << ", " << j << "] = " << got << ", expected " << ref;
          }
        }
      }
      EXPECT_EQ(wrong, 0);
      EXPECT_LE(std::sqrt(err2 / ref2), 1e-2);
      for (size_t i = 0; i < kernel.workspaces.size(); ++i) {
        if (kernel.workspaces[i].name != kGemvCounters) continue;
        std::vector<int32_t> counters(kernel.workspaces[i].bytes / 4);
        ASSERT_TRUE(device_->copy_to_host(counters.data(), spaces[i].address(), counters.size() * 4).ok());
        for (int32_t counter : counters) ASSERT_EQ(counter, 0);
      }
    }
  }

  // Median microseconds per launch over `launches` launches rotating through enough W copies
  // that the L2 (50 MB) never holds the next one.
  double time_us(int m, int n, int k, const GemvConfig& config, const std::string& suffix) {
    BenchKernel kernel = gemv_kernel(m, n, k, config, suffix);
    absl::StatusOr<std::unique_ptr<runtime::Kernel>> made = try_load(kernel);
    if (!made.ok()) {
      std::printf("  %s: %s\n", kernel.program.name.c_str(), std::string(made.status().message()).substr(0, 200).c_str());
      return NAN;
    }
    std::unique_ptr<runtime::Kernel> loaded = *std::move(made);
    std::vector<runtime::DeviceBuffer> spaces = workspaces(kernel);
    const size_t w_bytes = size_t(n) * k * 2;
    const int copies = static_cast<int>(std::max<size_t>(2, (size_t{120} << 20) / w_bytes + 1));
    std::vector<runtime::DeviceBuffer> xs, ws, ys;
    for (int c = 0; c < copies; ++c) {
      xs.push_back(allocate(size_t(m) * k * 2, 0x3c));  // 0x3c3c: about 0.0115, never zero
      ws.push_back(allocate(w_bytes, 0x3c));
      ys.push_back(allocate(size_t(m) * n * 2, 0));
    }
    std::vector<std::vector<KernelArgument>> args;
    for (int c = 0; c < copies; ++c) args.push_back(arguments(kernel, xs[c].address(), ws[c].address(), ys[c].address(), spaces));
    runtime::Dim3 grid{static_cast<uint32_t>(kernel.grid[0]), static_cast<uint32_t>(kernel.grid[1]), 1};
    for (int c = 0; c < copies; ++c) EXPECT_TRUE(loaded->launch(grid, args[c], *stream_).ok());
    EXPECT_TRUE(device_->synchronize(*stream_).ok());
    runtime::Event start = *device_->create_event(), end = *device_->create_event();
    const int launches = std::max(copies, 200 / copies * copies);
    std::vector<double> samples;
    for (int repeat = 0; repeat < 5; ++repeat) {
      EXPECT_TRUE(device_->record(start, *stream_).ok());
      for (int i = 0; i < launches; ++i) EXPECT_TRUE(loaded->launch(grid, args[i % copies], *stream_).ok());
      EXPECT_TRUE(device_->record(end, *stream_).ok());
      EXPECT_TRUE(device_->synchronize(end).ok());
      samples.push_back(*device_->elapsed_ms(start, end) * 1000.0 / launches);
    }
    std::sort(samples.begin(), samples.end());
    return samples[samples.size() / 2];
  }

  std::mt19937 random_ = monotile::testing::case_rng();
  std::unique_ptr<runtime::Stream> stream_;

  static inline runtime::Device* device_ = nullptr;
  static inline std::string* skip_reason_ = nullptr;
  static inline jit::testing::TempDir* dir_ = nullptr;
  static inline jit::Jit* jit_ = nullptr;
};

TEST_F(GemvOnGpu, FmaRowsMatchFloat64) {
  check(kGemvFmaMaxRows, 6288, 7168, gemv_config(kGemvFmaMaxRows, 6288, 7168));
  check(4, 6288, 7168, GemvConfig{.block_n = 16, .block_k = 512, .splits = 1, .prefetch = true});
}

TEST_F(GemvOnGpu, FmaSplitKMatchesFloat64TwiceOnOneWorkspace) {
  GemvConfig config = gemv_config(1, 768, 3584);
  ASSERT_GT(config.splits, 1);
  check(1, 768, 3584, config);
  check(kGemvFmaMaxRows, 768, 3584, gemv_config(kGemvFmaMaxRows, 768, 3584));
}

TEST_F(GemvOnGpu, MatrixUnitMatchesFloat64) {
  check(32, 768, 3584, gemv_config(32, 768, 3584));
  check(64, 768, 3584, gemv_config(64, 768, 3584));
  // 8 rows of x padded to the unit's 16, K split.
  check(8, 768, 3584, GemvConfig{.matrix_unit = true, .block_n = 16, .block_k = 256, .splits = 2, .num_warps = 4});
  check(16, 7168, 1536, GemvConfig{.matrix_unit = true, .block_n = 16, .block_k = 256, .splits = 1, .num_warps = 4});
}

TEST_F(GemvOnGpu, SwappedMatrixUnitMatchesFloat64) {
  GemvConfig config = gemv_config(8, 6288, 7168);
  ASSERT_TRUE(config.swap_operands);
  check(8, 6288, 7168, config);
  // 64 rows of W per program: 6288 = 98 x 64 + 16, so the last block masks 48 rows.
  config.block_n = 64;
  config.num_warps = 4;
  check(5, 6288, 7168, config);
}

// The sweep's wider families on the real matrix unit: 128 rows of W on 8 warps with 32-wide
// steps and 8 splits (784 = 6 x 128 + 16: the last block masks 112 rows), 64 rows on 4 warps with
// 7 splits, x as A on 4 warps, and 4 rows of x padded to the unit's 8.
TEST_F(GemvOnGpu, WideMatrixUnitBlocksMatchFloat64) {
  auto matrix = [](int block_n, int num_warps, int block_k, int splits, bool swap) {
    return GemvConfig{.matrix_unit = true, .block_n = block_n, .block_k = block_k, .splits = splits,
                      .num_warps = num_warps, .prefetch = false, .swap_operands = swap};
  };
  check(64, 784, 1536, matrix(128, 8, 32, 8, true));
  check(32, 768, 3584, matrix(64, 4, 64, 7, true));
  check(64, 768, 3584, matrix(64, 4, 32, 4, false));
  check(4, 7168, 1536, matrix(16, 1, 256, 1, true));
}

// The configurations around the exported one, for one m.
std::vector<GemvConfig> sweep_variants(int m, int n, int k) {
  GemvConfig base = gemv_config(m, n, k);
  std::vector<GemvConfig> variants = {base};
  auto add = [&](GemvConfig v) {
    if (n % v.block_n == 0 && k % (v.block_k * v.splits) == 0) variants.push_back(v);
  };
  const int steps = k / base.block_k;
  for (int s : {1, 2, 3, 4, 7, 8, 14}) {
    if (s == base.splits || steps % s != 0 || s * (n / base.block_n) > 8192) continue;
    GemvConfig v = base;
    v.splits = s;
    add(v);
  }
  GemvConfig warps = base;
  warps.num_warps = base.num_warps == 4 ? 8 : 4;
  add(warps);
  GemvConfig other_path = base;
  other_path.matrix_unit = !base.matrix_unit;
  other_path.block_k = other_path.matrix_unit && m > 16 ? 128 : 256;
  if (!other_path.matrix_unit) {
    // The FMA path keeps m accumulators of [block_n, block_k / 8] per program: 16 rows, 4 warps.
    other_path.block_n = 16;
    other_path.num_warps = 4;
  }
  if (m <= 32) add(other_path);
  return variants;
}

// Times every variant of every harness shape for `m` and prints a table (the exported
// configuration first): every variant that compiles must run, and the exported one must be within
// 1.5x of the fastest (a guard against gross mis-tuning; the fine choice is docs/perf.md's).
class GemvSweep : public GemvOnGpu, public ::testing::WithParamInterface<int> {};

TEST_P(GemvSweep, ExportedConfigIsNearTheFastest) {
  const int m = GetParam();
  std::printf("%-26s %-26s %10s %8s\n", "kernel", "config", "us", "GB/s W");
  for (auto [k, n] : {std::pair{7168, 6288}, std::pair{1536, 7168}, std::pair{3584, 768}, std::pair{2304, 12288}}) {
    std::vector<GemvConfig> variants = sweep_variants(m, n, k);
    double exported = NAN, best = INFINITY;
    for (size_t v = 0; v < variants.size(); ++v) {
      const GemvConfig& c = variants[v];
      double us = time_us(m, n, k, c, v == 0 ? "" : "_v" + std::to_string(v));
      char config[64];
      std::snprintf(config, sizeof config, "%s bn%d bk%d s%d w%d", c.matrix_unit ? "mma" : "fma", c.block_n, c.block_k,
                    c.splits, c.num_warps);
      std::string name = "gemv_m" + std::to_string(m) + "_k" + std::to_string(k) + "_n" + std::to_string(n);
      std::printf("%-26s %-26s %10.2f %8.0f%s\n", name.c_str(), config, us, double(n) * k * 2 / us / 1e3,
                  v == 0 ? "  (exported)" : "");
      std::fflush(stdout);
      if (v == 0) exported = us;
      if (us < best) best = us;
    }
    EXPECT_LE(exported, 1.5 * best) << "m " << m << " k " << k << " n " << n;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryM, GemvSweep, ::testing::Values(1, 4, 8, 16, 32, 64));

}  // namespace
}  // namespace monotile::kernels::bench
