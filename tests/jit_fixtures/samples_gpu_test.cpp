// The sample kernels on the first GPU found (compiled through the JIT and the kernel cache for the
// device's own target), each against a host reference on fresh random input with the output
// poisoned first: exact for the add and the histogram, float-sum tolerance for the reduction, one
// bf16 step for the axpby, and f32-accumulation tolerance for the matrix unit (which checks the
// mma.sync / MFMA fragment layouts). Without a GPU every test skips with discovery's reason.
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "jit/jit.h"
#include "jit/test_support.h"
#include "tests/jit_fixtures/samples.h"
#include "tests/jit_fixtures/spelling.h"
#include "runtime/discovery.h"
#include "tests/testing/seed.h"

namespace monotile::testing {
namespace {

constexpr uint8_t kPoison = 0xFF;  // NaN floats, all-ones integers: an unwritten element fails

uint16_t bf16_bits(float value) {  // round to nearest even, as the kernels' mt_float_to_bf16
  uint32_t u;
  std::memcpy(&u, &value, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float bf16_value(uint16_t bits) {
  uint32_t u = uint32_t{bits} << 16;
  float value;
  std::memcpy(&value, &u, 4);
  return value;
}

class SamplesOnGpu : public ::testing::Test {
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

  const dsl::Target& target() const { return device_->info().target; }

  // Compiles `build` for this device, loads it and launches it on `grid` blocks.
  void launch(const jit::Build& build, runtime::Dim3 grid, std::vector<void*> args) {
    absl::StatusOr<jit::CompiledBuild> compiled = jit_->compile_build(build);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    absl::StatusOr<runtime::Module> module = device_->load_module(compiled->code_object, compiled->name);
    ASSERT_TRUE(module.ok()) << module.status();
    absl::StatusOr<runtime::Function> function = device_->function(*module, compiled->kernel_name);
    ASSERT_TRUE(function.ok()) << function.status();
    runtime::LaunchConfig config;
    config.grid = grid;
    config.block.x = static_cast<uint32_t>(compiled->launch.threads());
    ASSERT_TRUE(device_->launch(*function, config, args.data(), *stream_).ok());
    ASSERT_TRUE(device_->synchronize(*stream_).ok());
    modules_.push_back(*std::move(module));
  }

  template <typename T>
  runtime::DeviceBuffer upload(const std::vector<T>& values) {
    runtime::DeviceBuffer buffer = *device_->allocate(values.size() * sizeof(T));
    EXPECT_TRUE(device_->copy_to_device(buffer.address(), values.data(), buffer.size()).ok());
    return buffer;
  }
  runtime::DeviceBuffer poisoned(size_t bytes) {
    runtime::DeviceBuffer buffer = *device_->allocate(bytes);
    EXPECT_TRUE(device_->fill_bytes(buffer.address(), kPoison, bytes).ok());
    return buffer;
  }
  template <typename T>
  std::vector<T> download(const runtime::DeviceBuffer& buffer) {
    std::vector<T> values(buffer.size() / sizeof(T));
    EXPECT_TRUE(device_->copy_to_host(values.data(), buffer.address(), buffer.size()).ok());
    return values;
  }

  std::mt19937 random_ = monotile::testing::case_rng();
  std::unique_ptr<runtime::Stream> stream_;
  std::vector<runtime::Module> modules_;

  static inline runtime::Device* device_ = nullptr;
  static inline std::string* skip_reason_ = nullptr;
  static inline jit::testing::TempDir* dir_ = nullptr;
  static inline jit::Jit* jit_ = nullptr;
};

TEST_F(SamplesOnGpu, VectorAddIsExact) {
  const int n = (1 << 20) + 5;
  std::uniform_real_distribution<float> values(-100.0f, 100.0f);
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) a[i] = values(random_), b[i] = values(random_);
  runtime::DeviceBuffer a_buffer = upload(a), b_buffer = upload(b), c_buffer = poisoned(n * sizeof(float));
  uint64_t pa = a_buffer.address(), pb = b_buffer.address(), pc = c_buffer.address();
  int count = n;
  launch(samples::vector_add(target()), {static_cast<uint32_t>((n + 255) / 256), 1, 1}, {&pa, &pb, &pc, &count});
  std::vector<float> c = download<float>(c_buffer);
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += !(c[i] == a[i] + b[i]);
  EXPECT_EQ(wrong, 0);
}

TEST_F(SamplesOnGpu, BlockReduceMatchesFloat64) {
  const int n = 3 << 20, blocks = 96;
  std::uniform_real_distribution<float> values(-1.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = values(random_);
  runtime::DeviceBuffer x_buffer = upload(x), out_buffer = poisoned(blocks * sizeof(float));
  uint64_t px = x_buffer.address(), pout = out_buffer.address();
  int count = n;
  launch(samples::block_reduce(target()), {blocks, 1, 1}, {&px, &pout, &count});
  std::vector<float> out = download<float>(out_buffer);
  for (int block = 0; block < blocks; ++block) {
    double expected = 0, magnitude = 0;
    for (int i = block * samples::kBlockThreads; i < n; i += blocks * samples::kBlockThreads) {
      for (int t = 0; t < samples::kBlockThreads && i + t < n; ++t) expected += x[i + t], magnitude += std::fabs(x[i + t]);
    }
    EXPECT_NEAR(out[block], expected, 1e-5 * magnitude + 1e-6) << "block " << block;
  }
}

TEST_F(SamplesOnGpu, HistogramIsExact) {
  const int n = (1 << 22) + 17;
  std::vector<uint8_t> data(n);
  std::uniform_int_distribution<int> bytes(0, 255);
  for (uint8_t& v : data) v = static_cast<uint8_t>(bytes(random_));
  runtime::DeviceBuffer data_buffer = upload(data), bins_buffer = *device_->allocate(256 * sizeof(uint32_t));
  ASSERT_TRUE(device_->fill_bytes(bins_buffer.address(), 0, bins_buffer.size()).ok());
  uint64_t pdata = data_buffer.address(), pbins = bins_buffer.address();
  int count = n;
  launch(samples::histogram(target()), {64, 1, 1}, {&pdata, &count, &pbins});
  std::vector<uint32_t> expected(256, 0);
  for (uint8_t v : data) ++expected[v];
  EXPECT_EQ(download<uint32_t>(bins_buffer), expected);
}

TEST_F(SamplesOnGpu, Bf16AxpbyRoundsToNearestEven) {
  const int n = 100003;
  std::uniform_real_distribution<float> values(-8.0f, 8.0f);
  std::vector<uint16_t> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = bf16_bits(values(random_)), y[i] = bf16_bits(values(random_));
  runtime::DeviceBuffer x_buffer = upload(x), y_buffer = upload(y);
  uint64_t px = x_buffer.address(), py = y_buffer.address();
  float alpha = 1.7f, beta = -0.3f;
  int count = n;
  launch(samples::bf16_axpby(target()), {static_cast<uint32_t>((n + 255) / 256), 1, 1}, {&px, &py, &alpha, &beta, &count});
  std::vector<uint16_t> out = download<uint16_t>(y_buffer);
  int wrong = 0;
  for (int i = 0; i < n; ++i) {
    double exact = double{alpha} * bf16_value(x[i]) + double{beta} * bf16_value(y[i]);
    float got = bf16_value(out[i]);
    // Rounding to bf16 costs at most 2^-8 relative; the f32 math before it (fused or not) a few f32
    // ulps of the terms, which matters where the terms cancel.
    double terms = std::fabs(double{alpha} * bf16_value(x[i])) + std::fabs(double{beta} * bf16_value(y[i]));
    wrong += !(std::fabs(got - exact) <= std::ldexp(std::fabs(exact), -8) + std::ldexp(terms, -21));
  }
  EXPECT_EQ(wrong, 0);
}

TEST_F(SamplesOnGpu, MatrixTileMatchesFloat64) {
  samples::MatrixTile tile = target().vendor() == dsl::Vendor::kNvidia ? samples::cuda_matrix_tile()
                                                                      : samples::hip_matrix_tile();
  const int m = tile.m * 4, n = tile.n * 6, k = 128;
  std::uniform_real_distribution<float> values(-1.0f, 1.0f);
  std::vector<uint16_t> a(m * k), b(k * n);
  for (uint16_t& v : a) v = bf16_bits(values(random_));
  for (uint16_t& v : b) v = bf16_bits(values(random_));
  runtime::DeviceBuffer a_buffer = upload(a), b_buffer = upload(b), c_buffer = poisoned(m * n * sizeof(float));
  uint64_t pa = a_buffer.address(), pb = b_buffer.address(), pc = c_buffer.address();
  int mm = m, nn = n, kk = k;
  launch(samples::matrix_tile(target()), {static_cast<uint32_t>(n / tile.n), static_cast<uint32_t>(m / tile.m), 1},
         {&pa, &pb, &pc, &mm, &nn, &kk});
  std::vector<float> c = download<float>(c_buffer);
  int wrong = 0;
  for (int row = 0; row < m; ++row) {
    for (int col = 0; col < n; ++col) {
      double expected = 0, magnitude = 0;
      for (int i = 0; i < k; ++i) {
        double term = double{bf16_value(a[row * k + i])} * bf16_value(b[i * n + col]);
        expected += term, magnitude += std::fabs(term);
      }
      if (!(std::fabs(c[row * n + col] - expected) <= 2e-5 * magnitude + 1e-6) && ++wrong <= 5) {
        ADD_FAILURE() << "c[" << row << ", " << col << "] = " << c[row * n + col] << ", expected " << expected;
      }
    }
  }
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace monotile::testing
