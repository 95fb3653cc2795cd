// A TP rank's process killed between steps, on one GPU: two ranks as two processes of this test
// (forked before either touches the driver) sharing the first GPU, half its SMs each, their peer
// buffers mapped over IPC handles; k3-tiny's KDA layers 1 and 2 at TP 2 with the waits' default
// bound (10 s: without MPS the driver time-slices the two processes, and a healthy step's
// exchanges progress slice by slice within it) and a vote every 2 steps
// (executor_tp_kill_test_support.h). The survivor raises from after_step at its next vote and its
// health records name the peer's wait, within the bound plus a margin; a watchdog fails the test
// past that instead of hanging. Skips without a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/k3/k1.h"
#include "model/config.h"
#include "runtime/decode/executor_tp_kill_test_support.h"
#include "runtime/decode/socket_pair_group.h"
#include "runtime/discovery.h"

namespace monotile::runtime::decode {
namespace {

TEST(ExecutorTpKillGpu, ARankProcessKilledBetweenStepsMakesTheOtherRaiseWithinTheBound) {
  const int64_t wait_ns = kernels::k3::K1Build{}.wait_ns;
  constexpr int kMarginSeconds = 60;
  const model::ModelConfig config = *model::load_config("k3-tiny");
  KillRun run;
  const ForkedRanks verdicts = run_forked_ranks([&](Group& group) -> std::string {
    Discovery found = discover_devices();
    std::unique_ptr<Device> gpu = take_first_gpu(found);
    // The other rank decides the same (one GPU for both): neither enters the group's collectives.
    if (!gpu) return absl::StrCat("skip: ", no_gpu_reason(found));
    ExecutorOptions options;
    options.check_every = 2;
    options.programs = std::max(1, gpu->info().compute_units / 2);
    return run_rank_killed_between_steps(
        group, config, options, std::move(gpu),
        std::chrono::nanoseconds(wait_ns) + std::chrono::seconds(kMarginSeconds),
        group.rank() == 0 ? &run : nullptr);
  });
  if (verdicts.rank0.rfind("skip: ", 0) == 0) GTEST_SKIP() << verdicts.rank0.substr(6);
  expect_the_survivor_raised(verdicts, run, 2, wait_ns, kMarginSeconds);
  // Waits that reach their bound within the same few microseconds each record themselves; every
  // other wait ends at its next spin once FAILED is set, with no record.
  std::printf("rank 0's health %.1f s after the kill names %d waits: %s\n", run.seconds_to_health,
              recorded_waits(run.health), run.health.c_str());
}

}  // namespace
}  // namespace monotile::runtime::decode
