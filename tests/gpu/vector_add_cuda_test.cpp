// The first GPU test: a hand-written CUDA kernel compiled by the JIT's compiler (NVRTC, CUBIN for
// the device's exact target, sm_90a on an H200), loaded and launched through the CUDA device,
// checked element by element against the host on fresh random input with the output poisoned
// first; then the same launch captured into a graph and replayed; then dynamic shared memory
// above 48 KiB, host-mapped memory polled without a synchronize, and the driver's error messages.
// Without an NVIDIA GPU every test skips with discovery's reason.
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jit/compiler.h"
#include "runtime/device_cuda.h"
#include "tests/gpu/vector_add_kernels_cuda.h"
#include "tests/testing/seed.h"

namespace monotile {
namespace {

using ::testing::HasSubstr;
using runtime::Device;
using runtime::DevicePtr;
using runtime::LaunchConfig;


constexpr int kCount = (1 << 20) + 3;  // not a multiple of the block size
constexpr uint32_t kBlock = 256;
constexpr uint8_t kPoison = 0xFF;      // every float becomes NaN: an unwritten element fails

std::vector<float> random_floats(size_t count) {
  std::mt19937 generator = monotile::testing::case_rng();
  std::uniform_real_distribution<float> distribution(-100.0f, 100.0f);
  std::vector<float> values(count);
  for (float& value : values) value = distribution(generator);
  return values;
}

LaunchConfig launch_for(int count, uint32_t shared_memory_bytes = 0) {
  return {{static_cast<uint32_t>((count + kBlock - 1) / kBlock), 1, 1}, {kBlock, 1, 1},
          shared_memory_bytes};
}

class CudaVectorAdd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<runtime::BackendDevices> found = runtime::open_cuda_devices();
    if (!found.ok()) {
      *skip_reason_ = std::string(found.status().message());
      return;
    }
    if (found->devices.empty()) {
      *skip_reason_ = "the NVIDIA driver reported no usable device";
      return;
    }
    device_ = found->devices[0].release();
    const dsl::Target& target = device_->info().target;
    absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
    ASSERT_TRUE(compiler.ok()) << compiler.status();
    jit::CompileRequest request{.kernel_name = "vector_add",
                                .source = kVectorAddKernels,
                                .target = target,
                                .options = {},
                                .headers = {},
                                .build_name = "gpu vector_add test kernels",
                                .build_key = {}};
    absl::StatusOr<jit::CompileResult> compiled = (*compiler)->compile(request);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    *code_object_ = compiled->code_object;
  }

  void SetUp() override {
    if (device_ == nullptr) GTEST_SKIP() << "no NVIDIA GPU: " << *skip_reason_;
    ASSERT_FALSE(code_object_->empty()) << "compiling the test kernels failed (see above)";
    absl::StatusOr<runtime::Module> module = device_->load_module(*code_object_, "vector_add");
    ASSERT_TRUE(module.ok()) << module.status();
    module_ = *std::move(module);
    absl::StatusOr<runtime::Stream> stream = device_->create_stream();
    ASSERT_TRUE(stream.ok()) << stream.status();
    stream_ = *std::move(stream);
  }

  runtime::Function function(std::string_view name) {
    absl::StatusOr<runtime::Function> found = device_->function(module_, name);
    EXPECT_TRUE(found.ok()) << found.status();
    return found.ok() ? *found : runtime::Function();
  }

  runtime::DeviceBuffer buffer_of(const std::vector<float>& values) {
    absl::StatusOr<runtime::DeviceBuffer> buffer = device_->allocate(values.size() * sizeof(float));
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    if (!buffer.ok()) return {};
    EXPECT_TRUE(device_->copy_to_device(buffer->address(), values.data(), buffer->size()).ok());
    return *std::move(buffer);
  }

  // Every element of c equals a + b exactly (one IEEE add, the same on both sides).
  void expect_sum(const runtime::DeviceBuffer& c, const std::vector<float>& a,
                  const std::vector<float>& b) {
    std::vector<float> result(a.size());
    ASSERT_TRUE(device_->copy_to_host(result.data(), c.address(), c.size()).ok());
    int wrong = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      const float expected = a[i] + b[i];
      if (!(result[i] == expected) && ++wrong <= 5) {
        ADD_FAILURE() << "element " << i << ": got " << result[i] << ", expected " << expected;
      }
    }
    EXPECT_EQ(wrong, 0) << "of " << a.size() << " elements";
  }

  static Device* device_;
  static std::string* skip_reason_;
  static std::string* code_object_;
  runtime::Module module_;
  runtime::Stream stream_;
};

Device* CudaVectorAdd::device_ = nullptr;
std::string* CudaVectorAdd::skip_reason_ = new std::string;
std::string* CudaVectorAdd::code_object_ = new std::string;

TEST_F(CudaVectorAdd, ReportsAnArchSpecificTarget) {
  const runtime::DeviceInfo& info = device_->info();
  EXPECT_EQ(info.vendor, dsl::Vendor::kNvidia);
  EXPECT_GT(info.compute_units, 0);
  EXPECT_GT(info.memory_bytes, int64_t{1} << 30);
  if (info.target.compute_capability() == 90) {
    EXPECT_EQ(info.target.str(), "sm_90a");
  }
}

TEST_F(CudaVectorAdd, EveryElementMatchesTheHost) {
  const std::vector<float> a = random_floats(kCount);
  const std::vector<float> b = random_floats(kCount);
  runtime::DeviceBuffer a_buffer = buffer_of(a), b_buffer = buffer_of(b), c_buffer = buffer_of(b);
  ASSERT_TRUE(device_->fill_bytes(c_buffer.address(), kPoison, c_buffer.size()).ok());
  runtime::Function add = function("vector_add");
  DevicePtr a_address = a_buffer.address(), b_address = b_buffer.address(),
            c_address = c_buffer.address();
  int count = kCount;
  void* args[] = {&a_address, &b_address, &c_address, &count};
  ASSERT_TRUE(device_->launch(add, launch_for(kCount), args, stream_).ok());
  ASSERT_TRUE(device_->synchronize(stream_).ok());
  expect_sum(c_buffer, a, b);
}

TEST_F(CudaVectorAdd, GraphReplayRerunsTheCapturedLaunch) {
  std::vector<float> a = random_floats(kCount);
  const std::vector<float> b = random_floats(kCount);
  runtime::DeviceBuffer a_buffer = buffer_of(a), b_buffer = buffer_of(b), c_buffer = buffer_of(b);
  runtime::Function add = function("vector_add");
  DevicePtr a_address = a_buffer.address(), b_address = b_buffer.address(),
            c_address = c_buffer.address();
  int count = kCount;
  void* args[] = {&a_address, &b_address, &c_address, &count};
  ASSERT_TRUE(device_->begin_capture(stream_).ok());
  ASSERT_TRUE(device_->launch(add, launch_for(kCount), args, stream_).ok());
  absl::StatusOr<runtime::Graph> graph = device_->end_capture(stream_);
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (int replay = 0; replay < 2; ++replay) {
    // New input each time: the graph reads memory when it runs, not when it was captured.
    a = random_floats(kCount);
    ASSERT_TRUE(device_->copy_to_device(a_buffer.address(), a.data(), a_buffer.size()).ok());
    ASSERT_TRUE(device_->fill_bytes(c_buffer.address(), kPoison, c_buffer.size()).ok());
    absl::StatusOr<runtime::Event> start = device_->create_event();
    absl::StatusOr<runtime::Event> end = device_->create_event();
    ASSERT_TRUE(start.ok() && end.ok());
    ASSERT_TRUE(device_->record(*start, stream_).ok());
    ASSERT_TRUE(device_->replay(*graph, stream_).ok());
    ASSERT_TRUE(device_->record(*end, stream_).ok());
    ASSERT_TRUE(device_->synchronize(stream_).ok());
    absl::StatusOr<float> elapsed = device_->elapsed_ms(*start, *end);
    ASSERT_TRUE(elapsed.ok()) << elapsed.status();
    EXPECT_GT(*elapsed, 0.0f);
    expect_sum(c_buffer, a, b);
  }
}

TEST_F(CudaVectorAdd, DynamicSharedMemoryAbove48KiBNeedsTheOptIn) {
  constexpr uint32_t kSharedBytes = 100 * 1024;
  ASSERT_GE(device_->info().max_shared_memory_per_block, kSharedBytes);
  const std::vector<float> a = random_floats(kCount);
  const std::vector<float> b = random_floats(kCount);
  runtime::DeviceBuffer a_buffer = buffer_of(a), b_buffer = buffer_of(b), c_buffer = buffer_of(b);
  ASSERT_TRUE(device_->fill_bytes(c_buffer.address(), kPoison, c_buffer.size()).ok());
  runtime::Function staged = function("vector_add_staged");
  DevicePtr a_address = a_buffer.address(), b_address = b_buffer.address(),
            c_address = c_buffer.address();
  int count = kCount;
  int smem_floats = kSharedBytes / sizeof(float);
  void* args[] = {&a_address, &b_address, &c_address, &count, &smem_floats};
  absl::Status refused = device_->launch(staged, launch_for(kCount, kSharedBytes), args, stream_);
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr("cuLaunchKernel failed for \"vector_add_staged\" (grid 4097x1x1, block "
                        "256x1x1, smem 102400): CUDA_ERROR_INVALID_VALUE"));
  ASSERT_TRUE(device_->set_max_dynamic_shared_memory(staged, kSharedBytes).ok());
  ASSERT_TRUE(device_->launch(staged, launch_for(kCount, kSharedBytes), args, stream_).ok());
  ASSERT_TRUE(device_->synchronize(stream_).ok());
  expect_sum(c_buffer, a, b);
}

TEST_F(CudaVectorAdd, HostSeesAMappedHealthWordWithoutSynchronizing) {
  absl::StatusOr<runtime::HostMappedBuffer> health = device_->allocate_host_mapped(sizeof(uint32_t));
  ASSERT_TRUE(health.ok()) << health.status();
  runtime::Function set_flag = function("set_flag");
  DevicePtr flag = health->address();
  unsigned value = 0xC0FFEE;
  void* args[] = {&flag, &value};
  ASSERT_TRUE(device_->launch(set_flag, {{1, 1, 1}, {1, 1, 1}, 0}, args, stream_).ok());
  const volatile uint32_t* word = health->host_as<volatile uint32_t>();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (*word != value && std::chrono::steady_clock::now() < deadline) {
  }
  EXPECT_EQ(*word, value);
  ASSERT_TRUE(device_->synchronize(stream_).ok());
}

TEST_F(CudaVectorAdd, DriverErrorsNameTheCallAndItsArguments) {
  runtime::Function add = function("vector_add");
  DevicePtr none = 0;
  int count = 0;
  void* args[] = {&none, &none, &none, &count};
  absl::Status status = device_->launch(add, {{1, 1, 1}, {4096, 1, 1}, 0}, args, stream_);
  EXPECT_EQ(std::string(status.message()),
            "cuLaunchKernel failed for \"vector_add\" (grid 1x1x1, block 4096x1x1, smem 0): "
            "CUDA_ERROR_INVALID_VALUE");
  absl::StatusOr<runtime::Module> bad = device_->load_module("not a cubin", "bogus");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("cuModuleLoadData failed for module \"bogus\" (11 bytes) on "));
  absl::StatusOr<runtime::Function> missing = device_->function(module_, "vector_mul");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(std::string(missing.status().message()),
            "cuModuleGetFunction failed for \"vector_mul\" in module \"vector_add\": "
            "CUDA_ERROR_NOT_FOUND");
}

}  // namespace
}  // namespace monotile
