// GpuExecutor's own checks, on the CPU device (no GPU needed): copy bounds, a target without
// generated code, and discovery's reason when there is no GPU.
#include "tests/conformance/gpu_executor.h"

#include <array>
#include <vector>

#include "dsl/dsl.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/device_cpu.h"
#include "support/check.h"

namespace monotile::conformance {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::unique_ptr<GpuExecutor> on_cpu() {
  std::unique_ptr<runtime::Device> device = runtime::make_cpu_device();
  absl::StatusOr<runtime::Stream> stream = device->create_stream();
  MT_CHECK(stream.ok());
  return std::make_unique<GpuExecutor>(std::move(device), *std::move(stream), jit::Jit::process_default());
}

TEST(GpuExecutor, CopiesRoundTripThroughDeviceMemory) {
  std::unique_ptr<GpuExecutor> executor = on_cpu();
  absl::StatusOr<DeviceBuffer> buffer = executor->allocate(16, "x");
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  EXPECT_EQ(buffer->address % 256, 0u);
  std::array<std::byte, 16> in, out;
  for (size_t i = 0; i < in.size(); ++i) in[i] = std::byte(i * 7);
  ASSERT_TRUE(executor->copy_in(*buffer, in).ok());
  ASSERT_TRUE(executor->copy_out(out, *buffer).ok());
  EXPECT_EQ(in, out);
  executor->release_all();
}

TEST(GpuExecutor, RefusesCopiesLargerThanTheBuffer) {
  std::unique_ptr<GpuExecutor> executor = on_cpu();
  absl::StatusOr<DeviceBuffer> buffer = executor->allocate(8, "x");
  ASSERT_TRUE(buffer.ok());
  std::array<std::byte, 16> host{};
  EXPECT_EQ(std::string(executor->copy_in(*buffer, host).message()), "copy_in of 16 bytes into a buffer of 8");
  EXPECT_EQ(std::string(executor->copy_out(host, *buffer).message()), "copy_out of 16 bytes from a buffer of 8");
}

TEST(GpuExecutor, LaunchOnATargetWithoutGeneratedCodeNamesTheProgram) {
  std::unique_ptr<GpuExecutor> executor = on_cpu();
  dsl::Builder b("fill");
  dsl::Value out = b.arg("out", dsl::ptr(dsl::f32));
  dsl::store(out + dsl::arange(0, 32), dsl::full({32}, 1.0, dsl::f32));
  const dsl::Program program = b.finish();
  const absl::Status status = executor->launch(program, {1, 1, 1}, {});
  EXPECT_THAT(std::string(status.message()), StartsWith("make_build of \"fill\" for cpu: "));
}

TEST(GpuExecutor, WithoutAGpuCreateGivesDiscoverysReasons) {
  absl::StatusOr<std::unique_ptr<GpuExecutor>> executor = GpuExecutor::create();
  if (executor.ok()) GTEST_SKIP() << "a GPU is present: " << (*executor)->name();
  EXPECT_EQ(executor.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(executor.status().message()), StartsWith("no GPU: "));
  EXPECT_THAT(std::string(executor.status().message()), HasSubstr("NVIDIA"));
}

}  // namespace
}  // namespace monotile::conformance
