// A TP rank's process killed between steps, on the interpreter: two ranks as two forked processes
// (a socket pair their group, memfd peer buffers each maps of the other), k3-tiny's KDA layers 1
// and 2 at TP 2 with waits of 2 s and a vote every 2 steps (executor_tp_kill_test_support.h). The
// survivor raises from after_step at its next vote and its health records name the peer's wait,
// within the wait's bound plus a margin; a watchdog fails the test past that instead of hanging.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>

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
  // The interpreter's steps run as they are enqueued: the wait gave up before the vote, whose
  // message says this rank saw it.
  EXPECT_THAT(run.raised,
              ::testing::HasSubstr("; this rank has given up a wait in a layer kernel already; "));
}

}  // namespace
}  // namespace monotile::runtime::decode
