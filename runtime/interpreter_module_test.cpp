// The CPU device running DSL programs through the interpreter: a vector add checked element by
// element (fresh random input, output poisoned), replayed from a captured graph, and the errors
// for an out-of-bounds access, an unknown code object and a wrong kernel name.
#include "runtime/interpreter_module.h"

#include <cmath>
#include <random>
#include <vector>

#include "dsl/dsl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/device_cpu.h"
#include "tests/testing/seed.h"

namespace monotile::runtime {
namespace {

using ::testing::HasSubstr;

constexpr int kBlock = 64;

dsl::Program vector_add() {
  using namespace dsl;
  Builder b("vector_add", {.num_warps = 1});
  auto a = b.arg("a", ptr(f32)), x = b.arg("b", ptr(f32)), c = b.arg("c", ptr(f32));
  auto n = b.arg("n", i32);
  auto offsets = program_id(0) * kBlock + arange(0, kBlock);
  auto mask = offsets < n;
  store(c + offsets, load(a + offsets, mask) + load(x + offsets, mask), mask);
  return b.finish();
}

std::vector<float> random_floats(size_t count) {
  std::mt19937 generator = monotile::testing::case_rng();
  std::uniform_real_distribution<float> distribution(-10.0f, 10.0f);
  std::vector<float> values(count);
  for (float& value : values) value = distribution(generator);
  return values;
}

class InterpreterDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    catalog_ = std::make_shared<ProgramCatalog>();
    code_object_ = catalog_->add(vector_add());
    device_ = make_cpu_device(interpreter_loader(catalog_));
    absl::StatusOr<Module> module = device_->load_module(code_object_, "vector_add");
    ASSERT_TRUE(module.ok()) << module.status();
    module_ = *std::move(module);
    absl::StatusOr<Function> function = device_->function(module_, "vector_add");
    ASSERT_TRUE(function.ok()) << function.status();
    function_ = *function;
    absl::StatusOr<Stream> stream = device_->create_stream();
    ASSERT_TRUE(stream.ok());
    stream_ = *std::move(stream);
  }

  DeviceBuffer buffer_of(const std::vector<float>& values) {
    absl::StatusOr<DeviceBuffer> buffer = device_->allocate(values.size() * sizeof(float));
    EXPECT_TRUE(buffer.ok());
    EXPECT_TRUE(device_->copy_to_device(buffer->address(), values.data(), buffer->size()).ok());
    return *std::move(buffer);
  }

  std::shared_ptr<ProgramCatalog> catalog_;
  std::string code_object_;
  std::unique_ptr<Device> device_;
  Module module_;
  Function function_;
  Stream stream_;
};

TEST_F(InterpreterDevice, RunsAProgramAndReplaysItFromAGraph) {
  constexpr int kCount = 1000;  // not a multiple of the block
  std::vector<float> a = random_floats(kCount);
  const std::vector<float> b = random_floats(kCount);
  DeviceBuffer a_buffer = buffer_of(a), b_buffer = buffer_of(b), c_buffer = buffer_of(b);
  DevicePtr a_address = a_buffer.address(), b_address = b_buffer.address(),
            c_address = c_buffer.address();
  int32_t count = kCount;
  void* args[] = {&a_address, &b_address, &c_address, &count};
  const LaunchConfig config{{(kCount + kBlock - 1) / kBlock, 1, 1}, {32, 1, 1}, 0};
  ASSERT_TRUE(device_->begin_capture(stream_).ok());
  ASSERT_TRUE(device_->launch(function_, config, args, stream_).ok());
  absl::StatusOr<Graph> graph = device_->end_capture(stream_);
  ASSERT_TRUE(graph.ok()) << graph.status();
  for (int run = 0; run < 2; ++run) {
    a = random_floats(kCount);
    ASSERT_TRUE(device_->copy_to_device(a_address, a.data(), a_buffer.size()).ok());
    ASSERT_TRUE(device_->fill_bytes(c_address, 0xFF, c_buffer.size()).ok());
    absl::Status status = run == 0 ? device_->launch(function_, config, args, stream_)
                                   : device_->replay(*graph, stream_);
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_TRUE(device_->synchronize(stream_).ok());
    std::vector<float> c(kCount);
    ASSERT_TRUE(device_->copy_to_host(c.data(), c_address, c_buffer.size()).ok());
    for (int i = 0; i < kCount; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "run " << run << " element " << i;
  }
}

TEST_F(InterpreterDevice, OutOfBoundsNamesTheKernelAndTheMemory) {
  DeviceBuffer a_buffer = buffer_of(random_floats(10));
  DevicePtr address = a_buffer.address();
  int32_t count = 64;  // the buffers hold 10
  void* args[] = {&address, &address, &address, &count};
  absl::Status status = device_->launch(function_, {{1, 1, 1}, {1, 1, 1}, 0}, args, stream_);
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(std::string(status.message()),
              HasSubstr("kernel \"vector_add\" (grid 1x1x1, block 1x1x1, smem 0): "));
  EXPECT_THAT(std::string(status.message()), HasSubstr("interpreter_module_test.cpp"));
}

TEST_F(InterpreterDevice, UnknownCodeObjectIsNotFound) {
  absl::StatusOr<Module> module = device_->load_module("monotile-interp:0:nothing", "nothing");
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(std::string(module.status().message()),
            "loading module \"nothing\" on the CPU device: no interpreter program under code "
            "object \"monotile-interp:0:nothing\"; hint: a CPU code object comes from "
            "ProgramCatalog::add of the catalog the device loads from");
}

TEST_F(InterpreterDevice, WrongKernelNameSaysWhichItHas) {
  absl::StatusOr<Function> function = device_->function(module_, "vector_mul");
  ASSERT_FALSE(function.ok());
  EXPECT_EQ(std::string(function.status().message()),
            "looking up \"vector_mul\" in module \"vector_add\": the module's only kernel is "
            "\"vector_add\", not \"vector_mul\"");
}

TEST(ProgramCatalog, SameProgramSameCodeObject) {
  ProgramCatalog catalog;
  const std::string first = catalog.add(vector_add());
  EXPECT_EQ(catalog.add(vector_add()), first);
  EXPECT_THAT(first, ::testing::StartsWith("monotile-interp:"));
  EXPECT_THAT(first, ::testing::EndsWith(":vector_add"));
}

}  // namespace
}  // namespace monotile::runtime
