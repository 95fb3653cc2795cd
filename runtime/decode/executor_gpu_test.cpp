// SpecializedDecode on a GPU at k3-tiny, TP 1 (executor_test_support.h): three steps of every served
// layer and a captured step replayed with new metadata and padding, each layer against the float64
// reference, also with K1 and K2 built for dependent launch; an executor constructed again over the
// warm kernel cache compiles nothing. Skips, with
// the reason, where there is no GPU.
#include "runtime/decode/executor_test_support.h"

#include <chrono>

#include "absl/strings/str_join.h"
#include "runtime/discovery.h"

namespace monotile::runtime::decode {
namespace {

class ExecutorGpu : public ExecutorFixture {
 protected:
  std::unique_ptr<Device> make_device() override {
    Discovery found = discover_devices();
    for (std::unique_ptr<Device>& device : found.devices) {
      if (device->info().vendor != dsl::Vendor::kCpu) return std::move(device);
    }
    std::vector<std::string> reasons;
    for (const MissingBackend& missing : found.missing) reasons.push_back(missing.reason);
    skip_reason_ = "no GPU: " + absl::StrJoin(reasons, "; ");
    return nullptr;
  }
};

TEST_F(ExecutorGpu, ServesEveryLayerOfThreeSteps) { three_steps(); }

TEST_F(ExecutorGpu, AStepCapturedOnceReplaysWithNewMetadataAndPadding) { graph_replay(); }

// K1 and K2 built for programmatic dependent launch (launched with programmatic stream serialization on sm_90+):
// every layer still matches the float64 reference, and a captured step (programmatic edges between
// its kernels) replays bit for bit as an eager run of the same inputs.
TEST_F(ExecutorGpu, WithDependentLaunchServesEveryLayerOfThreeSteps) { three_steps(true); }

TEST_F(ExecutorGpu, WithDependentLaunchACapturedStepReplaysAsAnEagerRun) { graph_replay(true); }

TEST_F(ExecutorGpu, ConstructionOverAWarmCacheLowersAndCompilesNothing) {
  std::unique_ptr<Group> group = make_single_process_group();
  auto make = [&] {
    return SpecializedDecode::create(weights_.backbone, {.q = kQ, .max_rows = 16}, *group, *device_,
                                     jit::Jit::process_default(),
                                     {.on_progress = nullptr, .log = [](const std::string& line) {
                                        std::printf("%s\n", line.c_str());
                                      }});
  };
  absl::StatusOr<std::unique_ptr<SpecializedDecode>> first = make();
  ASSERT_TRUE(first.ok()) << first.status();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<SpecializedDecode>> again = make();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->stats().compiled, 0);
  EXPECT_EQ((*again)->stats().lowered, 0);  // direct mode found every build from its program
  EXPECT_EQ((*again)->stats().builds, (*first)->stats().builds);
  std::printf("construction over a warm cache: %d builds, every width of q %d up to 16, in %.3f s\n",
              (*again)->stats().builds, kQ, seconds);
}

}  // namespace
}  // namespace monotile::runtime::decode
