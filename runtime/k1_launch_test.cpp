// K1's binding on the CPU device: arguments in k1_parameters order that the program's signature
// accepts, control words and health zeroed at creation, program counts per device, and a failed
// wait's record turned into an error that names it.
#include "runtime/k1_launch.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/config.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"

namespace monotile::runtime {
namespace {

kernels::k3::K1Build tiny_build(int tokens, int q) {
  absl::StatusOr<model::ModelConfig> config = model::load_config("k3-tiny");
  EXPECT_TRUE(config.ok());
  absl::StatusOr<kernels::k3::K1Build> build = kernels::k3::k1_build(*config, 1, 4, 2192, tokens, q, q + 2, true);
  EXPECT_TRUE(build.ok()) << build.status();
  return *build;
}

TEST(K1Launch, ArgumentsFollowTheProgramsParameters) {
  std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(ProgramCatalog::process()));
  const kernels::k3::K1Build build = tiny_build(4, 2);
  absl::StatusOr<Kernel> kernel = load_k1(*device, build, jit::Jit::process_default());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<K1Launch> launch = K1Launch::create(*device, build, 8);
  ASSERT_TRUE(launch.ok()) << launch.status();
  K1Tensors tensors;
  tensors.prefix = 0x1000;
  tensors.core = 0x2000;
  tensors.blocks_token_stride = 512;
  const LaunchArguments args = launch->arguments(tensors, 7);
  const std::vector<std::string> names = kernels::k3::k1_parameters(build);
  ASSERT_EQ(args.size(), names.size());
  auto at = [&](const std::string& name) { return args[std::find(names.begin(), names.end(), name) - names.begin()]; };
  EXPECT_EQ(at("prefix").int_value(), 0x1000);
  EXPECT_EQ(at("core").int_value(), 0x2000);
  EXPECT_EQ(at("blocks_token_stride").int_value(), 512);
  EXPECT_EQ(at("layer").int_value(), 7);
  EXPECT_EQ(at("health").int_value(), static_cast<int64_t>(launch->health()));
  EXPECT_EQ(at("x_rows").int_value(), static_cast<int64_t>(launch->x_rows()));
  // Every argument's type is the one the program declares.
  EXPECT_TRUE(pack_arguments(kernel->name(), kernel->params(), args).ok());
}

TEST(K1Launch, ZeroesTheControlWordsAndTheHealthWords) {
  std::unique_ptr<Device> device = make_cpu_device();
  const kernels::k3::K1Build build = tiny_build(8, 4);
  absl::StatusOr<K1Launch> launch = K1Launch::create(*device, build, 12);
  ASSERT_TRUE(launch.ok()) << launch.status();
  std::vector<uint8_t> control(static_cast<size_t>(launch->layout().zeroed_bytes), 0xff);
  ASSERT_TRUE(device->copy_to_host(control.data(), launch->scratch(), control.size()).ok());
  EXPECT_EQ(std::count(control.begin(), control.end(), 0), static_cast<long>(control.size()));
  std::vector<int32_t> health(static_cast<size_t>(kernels::k3::health_words(12)), -1);
  ASSERT_TRUE(device->copy_to_host(health.data(), launch->health(), health.size() * 4).ok());
  EXPECT_EQ(std::count(health.begin(), health.end(), 0), static_cast<long>(health.size()));
  EXPECT_TRUE(launch->check_health().ok());
}

TEST(K1Launch, RefusesNoPrograms) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<K1Launch> launch = K1Launch::create(*device, tiny_build(8, 4), 0);
  ASSERT_FALSE(launch.ok());
  EXPECT_EQ(std::string(launch.status().message()), "K1 needs at least one program, got 0");
}

TEST(K1Launch, RefusesMoreBlocksThanTheBuildsMaximum) {
  std::unique_ptr<Device> device = make_cpu_device();
  kernels::k3::K1Build build = tiny_build(8, 4);
  build.nblocks = build.max_blocks + 1;
  absl::StatusOr<K1Launch> launch = K1Launch::create(*device, build, 8);
  ASSERT_FALSE(launch.ok());
  EXPECT_EQ(std::string(launch.status().message()),
            absl::StrCat("K1 of build \"", kernels::k3::k1_name(build), "\": nblocks 3 and write_index -1, expected ",
                         "nblocks in 0..2 (max_blocks) and write_index >= -1; hint: take the build from k1_build, ",
                         "which sets max_blocks to the model's block count"));
}

TEST(K1Launch, TheStageClockIsBound) {
  std::unique_ptr<Device> device = make_cpu_device();
  kernels::k3::K1Build build = tiny_build(4, 2);
  build.stage_clock = true;
  absl::StatusOr<K1Launch> launch = K1Launch::create(*device, build, 8);
  ASSERT_TRUE(launch.ok()) << launch.status();
  const LaunchArguments args = launch->arguments({}, 1);
  ASSERT_EQ(kernels::k3::k1_parameters(build).back(), "clock");
  EXPECT_EQ(args.back().int_value(), static_cast<int64_t>(launch->clock()));
  EXPECT_NE(launch->clock(), 0u);
}

TEST(K1Launch, ProgramsPerDevice) {
  DeviceInfo cpu;
  DeviceInfo gpu;
  gpu.vendor = dsl::Vendor::kNvidia;
  gpu.compute_units = 132;
  EXPECT_EQ(k1_programs(cpu, tiny_build(4, 2)), 8);
  EXPECT_EQ(k1_programs(cpu, tiny_build(16, 4)), 16);
  EXPECT_EQ(k1_programs(gpu, tiny_build(16, 4)), 132);
}

TEST(K1Launch, AFailedWaitIsAnErrorNamingIt) {
  std::unique_ptr<Device> device = make_cpu_device();
  const kernels::k3::K1Build build = tiny_build(4, 2);
  absl::StatusOr<K1Launch> launch = K1Launch::create(*device, build, 8);
  ASSERT_TRUE(launch.ok()) << launch.status();
  // Program 5 gave up on the in_proj flag: [1, region, index, expected, seen, program, clock, 0].
  const int32_t failed = 1;
  const int32_t record[8] = {1, static_cast<int32_t>(kernels::k3::K1Region::kProj), 0, kernels::k3::step_tag(1, 3), 0, 5, 77, 0};
  ASSERT_TRUE(device->copy_to_device(launch->health(), &failed, 4).ok());
  ASSERT_TRUE(device->copy_to_device(launch->health() + 4 * 8 * 6, record, sizeof record).ok());
  absl::StatusOr<std::vector<K1WaitRecord>> waits = launch->failed_waits();
  ASSERT_TRUE(waits.ok());
  ASSERT_EQ(waits->size(), 1u);
  EXPECT_EQ((*waits)[0].program, 5);
  EXPECT_EQ(std::string(launch->check_health().message()),
            absl::StrCat("K1 \"", kernels::k3::k1_name(build),
                         "\" over 8 programs: a hand-off wait gave up after 10000 ms: program 5 waited on in_proj "
                         "(region ", static_cast<int32_t>(kernels::k3::K1Region::kProj),
                         ") flag 0: expected tag 260, saw 0; hint: every program must be resident at once (a "
                         "persistent kernel)"));
}

}  // namespace
}  // namespace monotile::runtime
