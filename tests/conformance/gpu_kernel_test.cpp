// runtime::Kernel on a GPU: a launch recorded by graph capture runs only when replayed (it never
// synchronizes), and a wrong argument is refused before the driver sees it.
#include <vector>

#include "dsl/dsl.h"
#include "gtest/gtest.h"
#include "jit/program_build.h"
#include "runtime/kernel.h"
#include "tests/conformance/gpu_executor.h"

namespace monotile::conformance {
namespace {

// x[i] += 1 for i < n.
dsl::Program increment() {
  using namespace monotile::dsl;  // NOLINT
  Builder b("increment");
  Value x = b.arg("x", ptr(i32)), n = b.arg("n", i32);
  Value offsets = program_id(0) * 128 + arange(0, 128);
  Value mask = offsets < n;
  store(x + offsets, load(x + offsets, mask) + 1, mask);
  return b.finish();
}

TEST(GpuKernel, CapturedLaunchRunsOnlyWhenReplayed) {
  absl::StatusOr<std::unique_ptr<GpuExecutor>> executor = GpuExecutor::create();
  if (!executor.ok()) GTEST_SKIP() << executor.status().message();
  runtime::Device& device = (*executor)->device();
  absl::StatusOr<jit::ProgramBuild> build = jit::make_build(increment(), device.info().target);
  ASSERT_TRUE(build.ok()) << build.status();
  absl::StatusOr<jit::CompiledBuild> compiled = jit::compile_build(build->build);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  absl::StatusOr<runtime::Kernel> kernel = runtime::Kernel::load(device, *compiled, build->params);
  ASSERT_TRUE(kernel.ok()) << kernel.status();

  constexpr int kCount = 1000;
  std::vector<int32_t> host(kCount);
  for (int i = 0; i < kCount; ++i) host[i] = i;
  absl::StatusOr<runtime::DeviceBuffer> x = device.allocate(kCount * sizeof(int32_t));
  ASSERT_TRUE(x.ok());
  ASSERT_TRUE(device.copy_to_device(x->address(), host.data(), kCount * sizeof(int32_t)).ok());
  absl::StatusOr<runtime::Stream> stream = device.create_stream();
  ASSERT_TRUE(stream.ok());
  const std::vector<runtime::KernelArgument> args = {
      runtime::KernelArgument::pointer(reinterpret_cast<const void*>(x->address()), dsl::ScalarType::kI32),
      runtime::KernelArgument::of(int32_t{kCount})};
  ASSERT_TRUE(device.begin_capture(*stream).ok());
  ASSERT_TRUE(kernel->launch({(kCount + 127) / 128, 1, 1}, args, *stream).ok());
  absl::StatusOr<runtime::Graph> graph = device.end_capture(*stream);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_TRUE(device.synchronize(*stream).ok());
  std::vector<int32_t> out(kCount);
  ASSERT_TRUE(device.copy_to_host(out.data(), x->address(), kCount * sizeof(int32_t)).ok());
  EXPECT_EQ(out, host) << "a captured launch ran before its replay";

  ASSERT_TRUE(device.replay(*graph, *stream).ok());
  ASSERT_TRUE(device.replay(*graph, *stream).ok());
  ASSERT_TRUE(device.synchronize(*stream).ok());
  ASSERT_TRUE(device.copy_to_host(out.data(), x->address(), kCount * sizeof(int32_t)).ok());
  for (int i = 0; i < kCount; ++i) ASSERT_EQ(out[i], i + 2) << i;

  const std::vector<runtime::KernelArgument> wrong = {runtime::KernelArgument::of(int32_t{kCount})};
  EXPECT_EQ(std::string(kernel->launch({1, 1, 1}, wrong, *stream).message()),
            "launch of kernel \"increment\": expected 2 arguments (x: ptr<i32>, n: i32), got 1; hint: pass one "
            "argument per parameter, in order");
}

}  // namespace
}  // namespace monotile::conformance
