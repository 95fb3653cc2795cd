// Kernel's argument checks and packing, and a checked launch on the CPU device (the interpreter
// behind the same Device interface a GPU uses).
#include "runtime/kernel.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dsl/dsl.h"
#include "dsl/interp/float16.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"

namespace monotile::runtime {
namespace {

using dsl::ElementType;
using dsl::ScalarType;
using dsl::lower::KernelParam;
using ::testing::HasSubstr;

std::vector<KernelParam> saxpy_params() {
  return {KernelParam{"x", {ScalarType::kF32, true}, "float*", 8, 8},
          KernelParam{"out", {ScalarType::kBf16, true}, "mt_bf16*", 8, 8},
          KernelParam{"scale", {ScalarType::kBf16, false}, "mt_bf16", 2, 2},
          KernelParam{"n", {ScalarType::kI32, false}, "int", 4, 4},
          KernelParam{"flag", {ScalarType::kI1, false}, "bool", 1, 1}};
}

std::string error_of(const std::vector<KernelArgument>& args) {
  absl::StatusOr<PackedArguments> packed = pack_arguments("saxpy", saxpy_params(), args);
  EXPECT_FALSE(packed.ok());
  EXPECT_EQ(packed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(packed.status().message());
}

float x_data[4];
uint16_t out_data[4];

TEST(PackArguments, WrongCountNamesTheSignature) {
  EXPECT_EQ(error_of({KernelArgument::of(x_data)}),
            "launch of kernel \"saxpy\": expected 5 arguments (x: ptr<f32>, out: ptr<bf16>, scale: bf16, n: i32, "
            "flag: i1), got 1; hint: pass one argument per parameter, in order");
}

TEST(PackArguments, ScalarWherePointerExpected) {
  EXPECT_EQ(error_of({KernelArgument::of(int32_t{3}), KernelArgument::pointer(out_data, ScalarType::kBf16),
                      KernelArgument::floating(ScalarType::kBf16, 1.0), KernelArgument::of(int32_t{4}),
                      KernelArgument::integer(ScalarType::kI1, 1)}),
            "launch of kernel \"saxpy\": argument 0 \"x\": expected ptr<f32>, got i32; hint: pass a buffer of f32");
}

TEST(PackArguments, WrongPointeeDtype) {
  EXPECT_EQ(error_of({KernelArgument::of(x_data), KernelArgument::of(x_data),
                      KernelArgument::floating(ScalarType::kBf16, 1.0), KernelArgument::of(int32_t{4}),
                      KernelArgument::integer(ScalarType::kI1, 1)}),
            "launch of kernel \"saxpy\": argument 1 \"out\": expected ptr<bf16>, got ptr<f32>; hint: pass a buffer "
            "of bf16");
}

TEST(PackArguments, WrongScalarDtype) {
  EXPECT_EQ(error_of({KernelArgument::of(x_data), KernelArgument::pointer(out_data, ScalarType::kBf16),
                      KernelArgument::of(1.0f), KernelArgument::of(int32_t{4}),
                      KernelArgument::integer(ScalarType::kI1, 1)}),
            "launch of kernel \"saxpy\": argument 2 \"scale\": expected bf16, got f32; hint: pass a scalar of type bf16");
}

TEST(PackArguments, PointerWhereScalarExpected) {
  EXPECT_THAT(error_of({KernelArgument::of(x_data), KernelArgument::pointer(out_data, ScalarType::kBf16),
                        KernelArgument::floating(ScalarType::kBf16, 1.0), KernelArgument::pointer(x_data, ScalarType::kI32),
                        KernelArgument::integer(ScalarType::kI1, 1)}),
              HasSubstr("argument 3 \"n\": expected i32, got ptr<i32>; hint: pass a scalar of type i32"));
}

TEST(PackArguments, IntegerOutOfRange) {
  EXPECT_EQ(error_of({KernelArgument::of(x_data), KernelArgument::pointer(out_data, ScalarType::kBf16),
                      KernelArgument::floating(ScalarType::kBf16, 1.0), KernelArgument::integer(ScalarType::kI32, 1ll << 40),
                      KernelArgument::integer(ScalarType::kI1, 1)}),
            "launch of kernel \"saxpy\": argument 3 \"n\": value 1099511627776 does not fit i32");
  EXPECT_THAT(error_of({KernelArgument::of(x_data), KernelArgument::pointer(out_data, ScalarType::kBf16),
                        KernelArgument::floating(ScalarType::kBf16, 1.0), KernelArgument::of(int32_t{4}),
                        KernelArgument::integer(ScalarType::kI1, 2)}),
              HasSubstr("argument 4 \"flag\": value 2 does not fit i1"));
}

TEST(PackArguments, LaysOutEachParameterAsTheSignatureDeclares) {
  absl::StatusOr<PackedArguments> packed = pack_arguments(
      "saxpy", saxpy_params(),
      std::vector<KernelArgument>{KernelArgument::of(x_data), KernelArgument::pointer(out_data, ScalarType::kBf16),
                                  KernelArgument::floating(ScalarType::kBf16, 1.00390625),
                                  KernelArgument::of(int32_t{-7}), KernelArgument::integer(ScalarType::kI1, 1)});
  ASSERT_TRUE(packed.ok()) << packed.status();
  ASSERT_EQ(packed->size(), 5u);
  uint64_t address = 0;
  std::memcpy(&address, packed->pointers()[0], 8);
  EXPECT_EQ(address, reinterpret_cast<uint64_t>(x_data));
  EXPECT_EQ(packed->bytes(1).size(), 8u);
  // 1 + 2^-8 lies halfway between two bf16 values: round to nearest even gives 1.0 (0x3f80).
  uint16_t scale = 0;
  ASSERT_EQ(packed->bytes(2).size(), 2u);
  std::memcpy(&scale, packed->pointers()[2], 2);
  EXPECT_EQ(scale, 0x3f80);
  int32_t n = 0;
  std::memcpy(&n, packed->pointers()[3], 4);
  EXPECT_EQ(n, -7);
  ASSERT_EQ(packed->bytes(4).size(), 1u);
  EXPECT_EQ(*static_cast<const uint8_t*>(packed->pointers()[4]), 1);
}

TEST(PackArguments, PointersSurviveAMove) {
  absl::StatusOr<PackedArguments> packed =
      pack_arguments("one", std::vector<KernelParam>{KernelParam{"n", {ScalarType::kI64, false}, "long long", 8, 8}},
                     std::vector<KernelArgument>{KernelArgument::of(int64_t{1} << 40)});
  ASSERT_TRUE(packed.ok());
  PackedArguments moved = std::move(*packed);
  // The bytes live in the object: the moved one's views point at its own copy.
  EXPECT_EQ(moved.pointers()[0], static_cast<const void*>(moved.bytes(0).data()));
  int64_t value = 0;
  std::memcpy(&value, moved.pointers()[0], 8);
  EXPECT_EQ(value, int64_t{1} << 40);
}

TEST(PackArguments, IntoKeepsTheStorageAndEmptiesOnARefusal) {
  const std::vector<KernelParam> params = {KernelParam{"n", {ScalarType::kI32, false}, "int", 4, 4}};
  PackedArguments packed;
  ASSERT_TRUE(pack_arguments_into(packed, "one", params, std::vector<KernelArgument>{KernelArgument::of(int32_t{7})}).ok());
  void* const slot = packed.pointers()[0];
  ASSERT_TRUE(pack_arguments_into(packed, "one", params, std::vector<KernelArgument>{KernelArgument::of(int32_t{9})}).ok());
  EXPECT_EQ(packed.pointers()[0], slot) << "packed again in the same storage";
  int32_t value = 0;
  std::memcpy(&value, packed.pointers()[0], 4);
  EXPECT_EQ(value, 9);
  const absl::Status refused =
      pack_arguments_into(packed, "one", params, std::vector<KernelArgument>{KernelArgument::of(2.0f)});
  EXPECT_EQ(std::string(refused.message()),
            "launch of kernel \"one\": argument 0 \"n\": expected i32, got f32; hint: pass a scalar of type i32");
  EXPECT_EQ(packed.size(), 0u);
}

// scale(x, out, factor, n): out[i] = bf16(x[i] * factor) for i < n.
dsl::Program scale_program() {
  using namespace monotile::dsl;  // NOLINT
  Builder b("scale");
  Value x = b.arg("x", ptr(f32)), out = b.arg("out", ptr(bf16)), factor = b.arg("factor", bf16);
  Value n = b.arg("n", i32);
  Value offsets = arange(0, 64);
  Value mask = offsets < n;
  store(out + offsets, cast(load(x + offsets, mask) * cast(factor, f32), bf16), mask);
  return b.finish();
}

struct CpuKernelFixture {
  CpuKernelFixture() : catalog(std::make_shared<ProgramCatalog>()), device(make_cpu_device(interpreter_loader(catalog))) {
    const dsl::Program program = scale_program();
    build.name = build.kernel_name = program.name;
    build.code_object = catalog->add(program);
    params = {KernelParam{"x", {ScalarType::kF32, true}, "float*", 8, 8},
              KernelParam{"out", {ScalarType::kBf16, true}, "mt_bf16*", 8, 8},
              KernelParam{"factor", {ScalarType::kBf16, false}, "mt_bf16", 2, 2},
              KernelParam{"n", {ScalarType::kI32, false}, "int", 4, 4}};
  }
  std::shared_ptr<ProgramCatalog> catalog;
  std::unique_ptr<Device> device;
  jit::CompiledBuild build;
  std::vector<KernelParam> params;
};

TEST(Kernel, LaunchesOnTheCpuDeviceWithPackedArguments) {
  CpuKernelFixture f;
  absl::StatusOr<Kernel> kernel = Kernel::load(*f.device, f.build, f.params);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<DeviceBuffer> x = f.device->allocate(64 * 4), out = f.device->allocate(64 * 2);
  ASSERT_TRUE(x.ok() && out.ok());
  std::vector<float> host_x(64);
  for (int i = 0; i < 64; ++i) host_x[i] = 0.25f * i;
  ASSERT_TRUE(f.device->copy_to_device(x->address(), host_x.data(), 256).ok());
  ASSERT_TRUE(f.device->fill_bytes(out->address(), 0xff, 128).ok());
  absl::StatusOr<Stream> stream = f.device->create_stream();
  ASSERT_TRUE(stream.ok());
  const std::vector<KernelArgument> args = {
      KernelArgument::pointer(reinterpret_cast<const void*>(x->address()), ScalarType::kF32),
      KernelArgument::pointer(reinterpret_cast<const void*>(out->address()), ScalarType::kBf16),
      KernelArgument::floating(ScalarType::kBf16, 2.0), KernelArgument::of(int32_t{40})};
  ASSERT_TRUE(kernel->launch({1, 1, 1}, args, *stream).ok());
  ASSERT_TRUE(f.device->synchronize(*stream).ok());
  std::vector<uint16_t> host_out(64);
  ASSERT_TRUE(f.device->copy_to_host(host_out.data(), out->address(), 128).ok());
  for (int i = 0; i < 40; ++i) EXPECT_EQ(dsl::interp::bf16_bits_to_double(host_out[i]), 0.5 * i) << i;
  for (int i = 40; i < 64; ++i) EXPECT_EQ(host_out[i], 0xffff) << i;  // masked lanes untouched
}

TEST(Kernel, LaunchesArgumentsPackedOnceAndRepacked) {
  CpuKernelFixture f;
  absl::StatusOr<Kernel> kernel = Kernel::load(*f.device, f.build, f.params);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<DeviceBuffer> x = f.device->allocate(64 * 4), out = f.device->allocate(64 * 2);
  ASSERT_TRUE(x.ok() && out.ok());
  std::vector<float> host_x(64, 1.5f);
  ASSERT_TRUE(f.device->copy_to_device(x->address(), host_x.data(), 256).ok());
  ASSERT_TRUE(f.device->fill_bytes(out->address(), 0xff, 128).ok());
  absl::StatusOr<Stream> stream = f.device->create_stream();
  ASSERT_TRUE(stream.ok());
  PackedArguments packed;
  for (const int n : {8, 16}) {
    const std::vector<KernelArgument> args = {
        KernelArgument::pointer(reinterpret_cast<const void*>(x->address()), ScalarType::kF32),
        KernelArgument::pointer(reinterpret_cast<const void*>(out->address()), ScalarType::kBf16),
        KernelArgument::floating(ScalarType::kBf16, n == 8 ? 2.0 : 4.0), KernelArgument::of(int32_t{n})};
    ASSERT_TRUE(pack_arguments_into(packed, kernel->name(), kernel->params(), args).ok());
    ASSERT_TRUE(kernel->launch({1, 1, 1}, packed, *stream).ok());
  }
  std::vector<uint16_t> host_out(64);
  ASSERT_TRUE(f.device->copy_to_host(host_out.data(), out->address(), 128).ok());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(dsl::interp::bf16_bits_to_double(host_out[i]), 6.0) << i;
  for (int i = 16; i < 64; ++i) EXPECT_EQ(host_out[i], 0xffff) << i;

  PackedArguments other;
  ASSERT_TRUE(pack_arguments_into(other, "one", std::vector<KernelParam>{f.params[3]},
                                  std::vector<KernelArgument>{KernelArgument::of(int32_t{1})})
                  .ok());
  EXPECT_EQ(std::string(kernel->launch({1, 1, 1}, other, *stream).message()),
            "launch of kernel \"scale\": 1 arguments packed, expected 4 (x: ptr<f32>, out: ptr<bf16>, factor: bf16, "
            "n: i32); hint: pack them with this kernel's params()");
}

TEST(Kernel, RefusesWrongArgumentsBeforeTheDevice) {
  CpuKernelFixture f;
  absl::StatusOr<Kernel> kernel = Kernel::load(*f.device, f.build, f.params);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<Stream> stream = f.device->create_stream();
  ASSERT_TRUE(stream.ok());
  const std::vector<KernelArgument> args = {KernelArgument::of(x_data),
                                            KernelArgument::pointer(out_data, ScalarType::kBf16),
                                            KernelArgument::of(2.0f), KernelArgument::of(int32_t{40})};
  const absl::Status status = kernel->launch({1, 1, 1}, args, *stream);
  EXPECT_EQ(std::string(status.message()),
            "launch of kernel \"scale\": argument 2 \"factor\": expected bf16, got f32; hint: pass a scalar of type bf16");
}

TEST(Kernel, RefusesAnEmptyGrid) {
  CpuKernelFixture f;
  absl::StatusOr<Kernel> kernel = Kernel::load(*f.device, f.build, f.params);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<Stream> stream = f.device->create_stream();
  ASSERT_TRUE(stream.ok());
  const absl::Status status = kernel->launch({0, 1, 1}, {}, *stream);
  EXPECT_EQ(std::string(status.message()),
            "launch of kernel \"scale\": grid 0x1x1 has an empty dimension; expected every count >= 1");
}

TEST(Kernel, SetsTheBlockAndDynamicSharedMemoryOfTheBuild) {
  CpuKernelFixture f;
  f.build.launch.block_x = 256;
  absl::StatusOr<Kernel> kernel = Kernel::load(*f.device, f.build, f.params);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const LaunchConfig config = kernel->config({3, 2, 1});
  EXPECT_EQ(config.grid, (Dim3{3, 2, 1}));
  EXPECT_EQ(config.block, (Dim3{256, 1, 1}));
  EXPECT_EQ(config.shared_memory_bytes, 0u);
}

// A build whose program waits for its grid dependency launches with programmatic serialization
// (on CUDA through the driver's extended launch: driver_cuda_test); the CPU device runs it as any other launch.
TEST(Kernel, ABuildThatWaitsForItsGridDependencyLaunchesProgrammatically) {
  CpuKernelFixture f;
  EXPECT_FALSE(Kernel::load(*f.device, f.build, f.params)->config({1, 1, 1}).programmatic_dependency);
  f.build.launch.programmatic_dependency = true;
  absl::StatusOr<Kernel> kernel = Kernel::load(*f.device, f.build, f.params);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_TRUE(kernel->config({1, 1, 1}).programmatic_dependency);
  EXPECT_EQ(describe(kernel->config({1, 1, 1})), "grid 1x1x1, block 1x1x1, smem 0, programmatic");
  absl::StatusOr<DeviceBuffer> x = f.device->allocate(64 * 4), out = f.device->allocate(64 * 2);
  ASSERT_TRUE(x.ok() && out.ok());
  std::vector<float> host_x(64, 3.0f);
  ASSERT_TRUE(f.device->copy_to_device(x->address(), host_x.data(), 256).ok());
  absl::StatusOr<Stream> stream = f.device->create_stream();
  ASSERT_TRUE(stream.ok());
  const std::vector<KernelArgument> args = {
      KernelArgument::pointer(reinterpret_cast<const void*>(x->address()), ScalarType::kF32),
      KernelArgument::pointer(reinterpret_cast<const void*>(out->address()), ScalarType::kBf16),
      KernelArgument::floating(ScalarType::kBf16, 2.0), KernelArgument::of(int32_t{64})};
  ASSERT_TRUE(kernel->launch({1, 1, 1}, args, *stream).ok());
  ASSERT_TRUE(f.device->synchronize(*stream).ok());
  std::vector<uint16_t> host_out(64);
  ASSERT_TRUE(f.device->copy_to_host(host_out.data(), out->address(), 128).ok());
  for (int i = 0; i < 64; ++i) EXPECT_EQ(dsl::interp::bf16_bits_to_double(host_out[i]), 6.0) << i;
}

}  // namespace
}  // namespace monotile::runtime
