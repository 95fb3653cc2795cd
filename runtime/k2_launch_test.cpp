// K2's binding on the CPU device: arguments in k2_parameters order that the program's signature
// accepts, the tag slot 128 + layer, control words, health and a clock build's clock zeroed at
// creation, a failed wait's record turned into an error that names its region, and K2 run through
// it on the interpreter at k3-tiny TP 1 against the float64 reference, twice on one scratch
// (nothing zeroed between steps).
#include "runtime/k2_launch.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/k2_clock.h"
#include "kernels/k3/k2_test_support.h"
#include "model/config.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"
#include "runtime/k1_launch.h"
#include "runtime/k2_step_test_support.h"

namespace monotile::runtime {
namespace {

kernels::k3::K2Build tiny_build(int layer, int tokens) {
  absl::StatusOr<model::ModelConfig> config = model::load_config("k3-tiny");
  EXPECT_TRUE(config.ok());
  absl::StatusOr<model::RankDims> dims = model::rank_dims(*config, 1, 0);
  EXPECT_TRUE(dims.ok());
  absl::StatusOr<kernels::k3::K2Build> build =
      kernels::k3::k2_build(*config, *dims, layer, static_cast<int>(dims->kda_projection), tokens);
  EXPECT_TRUE(build.ok()) << build.status();
  return *build;
}

TEST(K2Launch, ArgumentsFollowTheProgramsParameters) {
  std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(ProgramCatalog::process()));
  const kernels::k3::K2Build build = tiny_build(1, 4);
  absl::StatusOr<Kernel> kernel = load_k2(*device, build, jit::Jit::process_default());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<K2Launch> launch = K2Launch::create(*device, build, 8);
  ASSERT_TRUE(launch.ok()) << launch.status();
  K2Tensors tensors;
  tensors.core = 0x1000;
  tensors.w13_scale = 0x2000;
  tensors.route_weights = 0x3000;
  tensors.blocks_block_stride = 256;
  const LaunchArguments args = launch->arguments(tensors, 7);
  const std::vector<std::string> names = kernels::k3::k2_parameters(build);
  ASSERT_EQ(args.size(), names.size());
  auto at = [&](const std::string& name) {
    return args[std::find(names.begin(), names.end(), name) - names.begin()];
  };
  EXPECT_EQ(at("core").int_value(), 0x1000);
  EXPECT_EQ(at("w13_scale").int_value(), 0x2000);
  EXPECT_EQ(at("route_weights").int_value(), 0x3000);
  EXPECT_EQ(at("blocks_block_stride").int_value(), 256);
  EXPECT_EQ(at("slot").int_value(), 128 + 7);
  EXPECT_EQ(at("health").int_value(), static_cast<int64_t>(launch->health()));
  EXPECT_EQ(at("a_rows").int_value(), static_cast<int64_t>(launch->a_rows()));
  EXPECT_EQ(at("y_rows").int_value(), static_cast<int64_t>(launch->y_rows()));
  EXPECT_EQ(at("inter").int_value(),
            static_cast<int64_t>(launch->scratch() + launch->layout().inter));
  // Every argument's type is the one the program declares.
  EXPECT_TRUE(pack_arguments(kernel->name(), kernel->params(), args).ok());
}

TEST(K2Launch, ZeroesTheControlWordsAndTheHealthWords) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<K2Launch> launch = K2Launch::create(*device, tiny_build(12, 6), 5);
  ASSERT_TRUE(launch.ok()) << launch.status();
  std::vector<uint8_t> control(static_cast<size_t>(launch->layout().zeroed_bytes), 0xff);
  ASSERT_TRUE(device->copy_to_host(control.data(), launch->scratch(), control.size()).ok());
  EXPECT_EQ(std::count(control.begin(), control.end(), 0), static_cast<long>(control.size()));
  std::vector<int32_t> health(static_cast<size_t>(kernels::k3::health_words(5)), -1);
  ASSERT_TRUE(device->copy_to_host(health.data(), launch->health(), health.size() * 4).ok());
  EXPECT_EQ(std::count(health.begin(), health.end(), 0), static_cast<long>(health.size()));
  EXPECT_TRUE(launch->check_health().ok());
}

TEST(K2Launch, SharesTheLaunchStateWithK1) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<LaunchState> made = LaunchState::create(*device, 12, "the layer kernels");
  ASSERT_TRUE(made.ok()) << made.status();
  auto state = std::make_shared<LaunchState>(std::move(*made));
  absl::StatusOr<K1Launch> k1 = K1Launch::create(
      *device, *kernels::k3::k1_build(*model::load_config("k3-tiny"), 1, 4, 2192, 4, 2, 4, true),
      state);
  absl::StatusOr<K2Launch> k2 = K2Launch::create(*device, tiny_build(1, 4), state);
  ASSERT_TRUE(k1.ok() && k2.ok());
  EXPECT_EQ(k1->programs(), 12);
  EXPECT_EQ(k2->programs(), 12);
  EXPECT_EQ(k1->health(), k2->health());
  EXPECT_NE(k1->scratch(), k2->scratch());
  ASSERT_TRUE(k2->set_epoch(9).ok());
  int32_t epoch = 0;
  ASSERT_TRUE(device->copy_to_host(&epoch, state->epoch(), 4).ok());
  EXPECT_EQ(epoch, 9);
}

TEST(K2Launch, RefusesNoPrograms) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<K2Launch> launch = K2Launch::create(*device, tiny_build(1, 4), 0);
  ASSERT_FALSE(launch.ok());
  EXPECT_EQ(std::string(launch.status().message()), "K2 needs at least one program, got 0");
}

TEST(K2Launch, RefusesALayerPastTheTagSlots) {
  std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(ProgramCatalog::process()));
  const kernels::k3::K2Build build = tiny_build(1, 1);
  absl::StatusOr<Kernel> kernel = load_k2(*device, build, jit::Jit::process_default());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<K2Launch> launch = K2Launch::create(*device, build, 8);
  ASSERT_TRUE(launch.ok()) << launch.status();
  absl::StatusOr<Stream> stream = device->create_stream();
  ASSERT_TRUE(stream.ok());
  EXPECT_EQ(std::string(launch->launch(*kernel, {}, 128, *stream).message()),
            "K2 layer 128 is outside 0..127: its tag slot 128 + layer must be below 256");
}

TEST(K2Launch, RefusesAnotherBuildsKernel) {
  std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(ProgramCatalog::process()));
  absl::StatusOr<Kernel> kernel = load_k1(
      *device, *kernels::k3::k1_build(*model::load_config("k3-tiny"), 1, 4, 2192, 4, 2, 4, true),
      jit::Jit::process_default());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<K2Launch> launch = K2Launch::create(*device, tiny_build(1, 4), 8);
  ASSERT_TRUE(launch.ok()) << launch.status();
  absl::StatusOr<Stream> stream = device->create_stream();
  ASSERT_TRUE(stream.ok());
  EXPECT_THAT(std::string(launch->launch(*kernel, {}, 1, *stream).message()),
              ::testing::HasSubstr(absl::StrCat("is not K2 of build \"",
                                                kernels::k3::k2_name(tiny_build(1, 4)),
                                                "\": parameters (prefix, delta, ")));
}

// The layer's place among the blocks is a launch value: k3-tiny's layer 12 (a block write, two
// sources) shares layer 1's kernel, and its launch passes its own nblocks and reset.
TEST(K2Launch, PassesTheLayersBlocksToAnotherLayersKernel) {
  std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(ProgramCatalog::process()));
  const kernels::k3::K2Build first = tiny_build(1, 4), write = tiny_build(12, 4);
  ASSERT_EQ(kernels::k3::k2_name(first), kernels::k3::k2_name(write));
  ASSERT_NE(first.nblocks, write.nblocks);
  absl::StatusOr<Kernel> kernel = load_k2(*device, first, jit::Jit::process_default());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<K2Launch> launch = K2Launch::create(*device, write, 8, &*kernel);
  ASSERT_TRUE(launch.ok()) << launch.status();
  const LaunchArguments args = launch->arguments({}, 12);
  const std::vector<std::string> names = parameter_names(*kernel);
  auto at = [&](const std::string& name) {
    return args[std::find(names.begin(), names.end(), name) - names.begin()];
  };
  EXPECT_EQ(at("nblocks").int_value(), write.nblocks);
  EXPECT_EQ(at("reset").int_value(), 1);
}

TEST(K2Launch, RefusesMoreBlocksThanTheBuildsMaximum) {
  std::unique_ptr<Device> device = make_cpu_device();
  kernels::k3::K2Build build = tiny_build(12, 4);
  build.nblocks = build.max_blocks + 1;
  absl::StatusOr<K2Launch> launch = K2Launch::create(*device, build, 8);
  ASSERT_FALSE(launch.ok());
  EXPECT_EQ(
      std::string(launch.status().message()),
      absl::StrCat(
          "K2 of build \"", kernels::k3::k2_name(build),
          "\": nblocks 3, expected 0..2 (max_blocks); ",
          "hint: take the build from k2_build, which sets max_blocks to the model's block count"));
}

TEST(K2Launch, TheStageClockIsBound) {
  std::unique_ptr<Device> device = make_cpu_device();
  kernels::k3::K2Build build = tiny_build(1, 4);
  build.stage_clock = true;
  absl::StatusOr<K2Launch> launch = K2Launch::create(*device, build, 8);
  ASSERT_TRUE(launch.ok()) << launch.status();
  const LaunchArguments args = launch->arguments({}, 1);
  ASSERT_EQ(kernels::k3::k2_parameters(build).back(), "clock");
  EXPECT_EQ(args.back().int_value(), static_cast<int64_t>(launch->clock()));
  ASSERT_NE(launch->clock(), 0u);
  std::vector<int64_t> clock(static_cast<size_t>(8 * kernels::k3::kK2ClockPoints), -1);
  ASSERT_TRUE(device->copy_to_host(clock.data(), launch->clock(), clock.size() * 8).ok());
  EXPECT_EQ(std::count(clock.begin(), clock.end(), 0), static_cast<long>(clock.size()));
}

TEST(K2Launch, ProgramsPerDevice) {
  DeviceInfo cpu;
  DeviceInfo gpu;
  gpu.vendor = dsl::Vendor::kNvidia;
  gpu.compute_units = 132;
  EXPECT_EQ(k2_programs(cpu, tiny_build(1, 16)), 8);
  EXPECT_EQ(k2_programs(gpu, tiny_build(1, 4)), 132);
}

TEST(K2Launch, AFailedWaitIsAnErrorNamingIt) {
  std::unique_ptr<Device> device = make_cpu_device();
  const kernels::k3::K2Build build = tiny_build(1, 4);
  absl::StatusOr<K2Launch> launch = K2Launch::create(*device, build, 8);
  ASSERT_TRUE(launch.ok()) << launch.status();
  // Program 2 gave up on the router's logits: [1, region, index, expected, seen, program, clock,
  // 0].
  const int32_t failed = 1;
  const int32_t region = static_cast<int32_t>(kernels::k3::K2Region::kRouterLogits);
  const int32_t record[8] = {
      1, region, 3, kernels::k3::step_tag(2, 129), kernels::k3::step_tag(1, 129), 2, 77, 0};
  ASSERT_TRUE(device->copy_to_device(launch->health(), &failed, 4).ok());
  ASSERT_TRUE(device->copy_to_device(launch->health() + 4 * 8 * 3, record, sizeof record).ok());
  absl::StatusOr<std::vector<WaitRecord>> waits = launch->failed_waits();
  ASSERT_TRUE(waits.ok());
  ASSERT_EQ(waits->size(), 1u);
  EXPECT_EQ((*waits)[0].program, 2);
  EXPECT_EQ((*waits)[0].region, region);
  EXPECT_EQ(std::string(launch->check_health().message()),
            absl::StrCat("K2 \"", kernels::k3::k2_name(build),
                         "\" over 8 programs: a hand-off wait gave up after 10000 ms: program 2 "
                         "waited on the router's "
                         "logits (region 6) flag 3: expected tag 642, saw 386; hint: every program "
                         "must be resident at "
                         "once (a persistent kernel)"));
}

TEST(K2Launch, RunsTwiceOnOneScratchAgainstTheReference) {
  const kernels::k3::K2Inputs in = kernels::k3::make_k2_inputs({.tokens = 4}, /*interpreter=*/true);
  ASSERT_FALSE(in.core.empty());
  std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(ProgramCatalog::process()));
  absl::StatusOr<Kernel> kernel = load_k2(*device, in.build, jit::Jit::process_default());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<K2Launch> launch =
      K2Launch::create(*device, in.build, k2_programs(device->info(), in.build));
  ASSERT_TRUE(launch.ok()) << launch.status();
  absl::StatusOr<Stream> stream = device->create_stream();
  ASSERT_TRUE(stream.ok());
  K2StepTensors step(*device, in);
  // The second step reuses the scratch as the first left it: only the epoch moves on.
  for (int32_t epoch : {1, 2}) {
    SCOPED_TRACE(absl::StrCat("epoch ", epoch));
    step.reset(*launch);
    ASSERT_TRUE(launch->set_epoch(epoch).ok());
    ASSERT_TRUE(launch->launch(*kernel, step.tensors(), in.c.layer, *stream).ok());
    ASSERT_TRUE(device->synchronize(*stream).ok());
    EXPECT_TRUE(launch->check_health().ok()) << launch->check_health();
    kernels::k3::check_k2_outputs(in, step.outputs(*launch));
  }
}

TEST(K2Launch, AWaitThatGivesUpOnTheInterpreterIsAnError) {
  kernels::k3::K2Inputs in = kernels::k3::make_k2_inputs({.tokens = 1}, /*interpreter=*/true);
  ASSERT_FALSE(in.core.empty());
  // Waits bounded by 1 ns: a program done with its o_proj task finds the others' not yet reduced
  // (the interpreter takes milliseconds per task) and gives up.
  in.build.wait_ns = 1;
  std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(ProgramCatalog::process()));
  absl::StatusOr<Kernel> kernel = load_k2(*device, in.build, jit::Jit::process_default());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  absl::StatusOr<K2Launch> launch = K2Launch::create(*device, in.build, 8);
  ASSERT_TRUE(launch.ok()) << launch.status();
  absl::StatusOr<Stream> stream = device->create_stream();
  ASSERT_TRUE(stream.ok());
  // A failed launch runs to its end on whatever the skipped waits left: zeroed data and routes keep
  // its expert ids in range, which the interpreter checks.
  ASSERT_TRUE(
      device->fill_bytes(launch->scratch(), 0, static_cast<size_t>(launch->layout().bytes)).ok());
  K2StepTensors step(*device, in);
  ASSERT_TRUE(device->fill_bytes(step.tensors().route_experts, 0, size_t{4} * in.build.top_k).ok());
  ASSERT_TRUE(launch->set_epoch(1).ok());
  absl::Status launched = launch->launch(*kernel, step.tensors(), in.c.layer, *stream);
  ASSERT_TRUE(launched.ok()) << launched;
  ASSERT_TRUE(device->synchronize(*stream).ok());
  absl::StatusOr<std::vector<WaitRecord>> waits = launch->failed_waits();
  ASSERT_TRUE(waits.ok());
  ASSERT_FALSE(waits->empty());
  EXPECT_THAT(
      std::string(launch->check_health().message()),
      ::testing::AllOf(
          ::testing::StartsWith(
              absl::StrCat("K2 \"", kernels::k3::k2_name(in.build),
                           "\" over 8 programs: a hand-off wait gave up after 0 ms: program ")),
          ::testing::HasSubstr(absl::StrCat("(region ", (*waits)[0].region, ") flag ")),
          ::testing::HasSubstr(absl::StrCat("expected tag ", kernels::k3::step_tag(1, 129))),
          ::testing::EndsWith(
              "hint: every program must be resident at once (a persistent kernel)")));
}

}  // namespace
}  // namespace monotile::runtime
