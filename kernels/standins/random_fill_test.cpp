// The device's random fill on the CPU interpreter: each element is the host mirror's value of its
// index and key (bf16, f32, bytes), elements past n are untouched, another key gives another
// stream; and the programs compile for sm_90a and gfx90a (skipped without a compiler).
#include "kernels/standins/random_fill.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "jit/compiler.h"
#include "jit/jit.h"
#include "jit/program_build.h"
#include "model/dtype.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"
#include "runtime/launch_state.h"

namespace monotile::kernels::standins {
namespace {

constexpr int64_t kCount = 2 * kRandomFillBlock + 5;  // a masked last program
constexpr int64_t kPoisoned = 16;                     // bytes past the end, left alone

class RandomFill : public ::testing::Test {
 protected:
  RandomFill()
      : device_(runtime::make_cpu_device(
            runtime::interpreter_loader(runtime::ProgramCatalog::process()))) {}

  // The bytes of a fill of kCount elements of `type` (element `size` bytes), with kPoisoned bytes
  // of 0xab after them.
  std::vector<uint8_t> fill(dsl::ElementType type, int size, uint32_t key, float low, float span) {
    const size_t bytes = static_cast<size_t>(kCount * size + kPoisoned);
    runtime::DeviceBuffer out = *device_->allocate(bytes);
    EXPECT_TRUE(device_->fill_bytes(out.address(), 0xab, bytes).ok());
    absl::StatusOr<runtime::Kernel> kernel =
        runtime::load_program(*device_, random_fill_program(type), jit::Jit::process_default());
    EXPECT_TRUE(kernel.ok()) << kernel.status();
    if (!kernel.ok()) return {};
    const std::array args{
        runtime::KernelArgument::pointer(reinterpret_cast<const void*>(out.address()), type.scalar),
        runtime::KernelArgument::integer(dsl::ScalarType::kI64, kCount),
        runtime::KernelArgument::integer(dsl::ScalarType::kU32, key),
        runtime::KernelArgument::floating(dsl::ScalarType::kF32, low),
        runtime::KernelArgument::floating(dsl::ScalarType::kF32, span)};
    runtime::Stream stream = *device_->create_stream();
    const uint32_t programs =
        static_cast<uint32_t>((kCount + kRandomFillBlock - 1) / kRandomFillBlock);
    EXPECT_TRUE(kernel->launch(runtime::Dim3{programs, 1, 1}, args, stream).ok());
    EXPECT_TRUE(device_->synchronize(stream).ok());
    std::vector<uint8_t> result(bytes);
    EXPECT_TRUE(device_->copy_to_host(result.data(), out.address(), bytes).ok());
    for (int64_t i = kCount * size; i < static_cast<int64_t>(bytes); ++i) {
      EXPECT_EQ(result[static_cast<size_t>(i)], 0xab)
          << "byte " << i << " past the fill was written";
    }
    return result;
  }

  std::unique_ptr<runtime::Device> device_;
};

TEST_F(RandomFill, Bf16IsTheHostMirrorsValue) {
  const std::vector<uint8_t> bytes = fill(dsl::bf16, 2, 7, -0.25f, 0.5f);
  ASSERT_FALSE(bytes.empty());
  for (int64_t i = 0; i < kCount; ++i) {
    uint16_t bits;
    std::memcpy(&bits, bytes.data() + 2 * i, 2);
    const double want = -0.25 + 0.5 * random_fill_uniform(7, i);
    ASSERT_NEAR(model::bf16_to_float(bits), want, std::abs(want) / 128 + 1e-6) << "element " << i;
  }
}

TEST_F(RandomFill, F32IsTheHostMirrorsValue) {
  const std::vector<uint8_t> bytes = fill(dsl::f32, 4, 11, 0.95f, 0.1f);
  ASSERT_FALSE(bytes.empty());
  for (int64_t i = 0; i < kCount; ++i) {
    float got;
    std::memcpy(&got, bytes.data() + 4 * i, 4);
    ASSERT_NEAR(got, 0.95 + 0.1 * random_fill_uniform(11, i), 1e-6) << "element " << i;
  }
}

TEST_F(RandomFill, BytesStayInTheirRangeAndCoverIt) {
  const std::vector<uint8_t> bytes = fill(dsl::u8, 1, 3, 118.0f, 13.0f);
  ASSERT_FALSE(bytes.empty());
  std::vector<int> seen(256, 0);
  for (int64_t i = 0; i < kCount; ++i) {
    const int want = static_cast<int>(std::floor(118.0 + 13.0 * random_fill_uniform(3, i)));
    ASSERT_EQ(bytes[static_cast<size_t>(i)], want) << "element " << i;
    ++seen[bytes[static_cast<size_t>(i)]];
  }
  for (int code = 118; code <= 130; ++code)
    EXPECT_GT(seen[code], 0) << "code " << code << " never drawn";
}

TEST_F(RandomFill, AnotherKeyIsAnotherStream) {
  const std::vector<uint8_t> a = fill(dsl::u8, 1, 1, 0.0f, 256.0f),
                             b = fill(dsl::u8, 1, 2, 0.0f, 256.0f);
  const std::vector<uint8_t> again = fill(dsl::u8, 1, 1, 0.0f, 256.0f);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a, again) << "a fill is a function of its key";
  int same = 0;
  for (int64_t i = 0; i < kCount; ++i)
    same += a[static_cast<size_t>(i)] == b[static_cast<size_t>(i)];
  EXPECT_LT(same, kCount / 64) << "two keys agree on " << same << " of " << kCount << " bytes";
}

void expect_compiles(const std::string& arch) {
  const dsl::Target target = *dsl::Target::parse(arch);
  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(target);
  if (!compiler.ok()) GTEST_SKIP() << "no compiler for " << arch << ": " << compiler.status();
  for (dsl::ElementType type : {dsl::bf16, dsl::f32, dsl::u8}) {
    const dsl::Program program = random_fill_program(type);
    SCOPED_TRACE(program.name);
    absl::StatusOr<jit::ProgramBuild> made = jit::make_build(program, target);
    ASSERT_TRUE(made.ok()) << made.status();
    absl::StatusOr<jit::CompileResult> result = (*compiler)->compile(made->build.request());
    ASSERT_TRUE(result.ok()) << result.status();
  }
}

TEST(RandomFillCompile, Sm90a) {
  expect_compiles("sm_90a");
}
TEST(RandomFillCompile, Gfx90a) {
  expect_compiles("gfx90a");
}

}  // namespace
}  // namespace monotile::kernels::standins
