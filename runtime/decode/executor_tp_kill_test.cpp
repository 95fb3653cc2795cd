// A TP rank's process killed between steps, on the interpreter: two ranks as two forked processes
// (a socket pair their group, memfd peer buffers each maps of the other), k3-tiny's KDA layers 1
// and 2 at TP 2 with waits of 2 s and a vote every 2 steps (executor_tp_kill_test_support.h). The
// survivor raises from after_step at its next vote and its health records name the peer's wait,
// within the wait's bound plus a margin; a watchdog fails the test past that instead of hanging.
// Only the first give-up records itself: the other waits end without a record (bar those that
// reached their bound in the same instant).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/k3/k1.h"
#include "model/config.h"
#include "runtime/decode/executor_tp_kill_test_support.h"
#include "runtime/decode/socket_pair_group.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"

namespace monotile::runtime::decode {
namespace {

TEST(ExecutorTpKill, ARankProcessKilledBetweenStepsMakesTheOtherRaiseWithinTheBound) {
  // Long enough for a healthy step's peer on a loaded 2-core machine, short enough to run fast.
  constexpr int64_t kWaitNs = 2'000'000'000;
  constexpr int kMarginSeconds = 20;
  const model::ModelConfig config = *model::load_config("k3-tiny");
  ExecutorOptions options;
  options.check_every = 2;
  options.wait_ns = kWaitNs;
  KillRun run;
  const ForkedRanks verdicts = run_forked_ranks([&](Group& group) {
    return run_rank_killed_between_steps(
        group, config, options, make_cpu_device(interpreter_loader(ProgramCatalog::process())),
        std::chrono::nanoseconds(kWaitNs) + std::chrono::seconds(kMarginSeconds),
        group.rank() == 0 ? &run : nullptr);
  });
  expect_the_survivor_raised(verdicts, run, options.check_every, kWaitNs, kMarginSeconds);
  // The waits under way when rank 1 died: programs 0-3 on its o_proj shares, programs 4-7 on the
  // MoE flag those programs would set. The first to reach its bound records itself; the rest end
  // at their next spin with no record, unless they reached their bound in the same instant (on a
  // loaded machine an interpreter thread can sit unscheduled for milliseconds between its timeout
  // and its FAILED store), so the count is not checked here (k2_tp_test checks a wait held apart).
  // The first step after the kill (epoch kHealthySteps + 1), layer 1's K2 (slot 128 + 1).
  const std::string tag =
      absl::StrCat(": expected tag ", kernels::k3::step_tag(kHealthySteps + 1, 128 + 1), ", saw ");
  EXPECT_THAT(
      run.health,
      ::testing::AnyOf(::testing::HasSubstr(
                           "waited on K2 o_proj's partial sums (region 9) from TP rank 1" + tag),
                       ::testing::HasSubstr("waited on K2 MoE (region 7) flag 0" + tag)));
  std::printf("rank 0's health names %d waits: %s\n", recorded_waits(run.health),
              run.health.c_str());
  // The interpreter's steps run as they are enqueued: the wait gave up before the vote, whose
  // message says this rank saw it.
  EXPECT_THAT(run.raised,
              ::testing::HasSubstr("; this rank has given up a wait in a layer kernel already; "));
}

}  // namespace
}  // namespace monotile::runtime::decode
