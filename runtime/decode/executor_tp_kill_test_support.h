// A TP rank's process killed between steps (executor_tp_kill_test on the interpreter,
// executor_tp_kill_gpu_test on one GPU): two ranks as two forked processes (run_forked_ranks, a
// socket pair their group), each serving k3-tiny's KDA layers 1 and 2 (KdaRank) with FailStop
// voting every check_every steps. After healthy steps rank 0 kills rank 1 with SIGKILL between
// steps and steps on alone: its next vote must raise from after_step, its waits for rank 1's
// shares give up within their bound into its health records, and nothing hangs (a watchdog ends
// the process past the bound). Compiled into the test binaries (gtest assertions), not a library.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "model/config.h"
#include "runtime/decode/executor_tp_test_support.h"
#include "runtime/decode/group.h"
#include "runtime/decode/socket_pair_group.h"
#include "runtime/decode/specialized_decode.h"
#include "support/status_macros.h"
#include "tests/testing/seed.h"

namespace monotile::runtime::decode {

// Ends this process with a message unless destroyed within `limit`: a hang fails the test at once
// instead of holding CI until ctest's timeout.
class Watchdog {
 public:
  Watchdog(std::chrono::nanoseconds limit, std::string what)
      : thread_([this, limit, what = std::move(what)] {
          std::unique_lock<std::mutex> lock(mutex_);
          if (!done_changed_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "watchdog: %s did not end within %.1f s: a hang\n", what.c_str(),
                         std::chrono::duration<double>(limit).count());
            std::fflush(stderr);
            std::_Exit(1);
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    done_changed_.notify_all();
    thread_.join();
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::thread thread_;  // last: it starts once the members above exist
};

// Healthy steps before the kill: a multiple of every check_every the tests use, so that the kill
// comes right after a vote and the next vote is check_every steps later.
inline constexpr int kHealthySteps = 4;

// What rank 0 saw after it killed rank 1.
struct KillRun {
  int raised_at = 0;  // the step whose after_step raised (0: none did)
  absl::StatusCode raised_code = absl::StatusCode::kOk;
  std::string raised;  // its message
  std::string health;  // check_health's message once the rank's stream drained
  double seconds_to_raise = 0, seconds_to_health = 0;  // since rank 1 was seen dead
};

// One rank's part, on `device` (made after the fork) with `options`: "" when it ran to the end,
// else what failed. Rank 0 fills `out` and arms a watchdog of `bound` at the kill; rank 1 never
// returns (it is killed waiting between steps).
inline std::string run_rank_killed_between_steps(Group& group, const model::ModelConfig& config,
                                                 const ExecutorOptions& options,
                                                 std::unique_ptr<Device> device,
                                                 std::chrono::nanoseconds bound, KillRun* out) {
  absl::Status status = [&]() -> absl::Status {
    MT_ASSIGN_OR_RETURN(std::vector<std::string> pids,
                        group.all_gather(std::to_string(::getpid())));
    MT_ASSIGN_OR_RETURN(std::unique_ptr<KdaRank> r,
                        KdaRank::create(group, config, options, std::move(device)));
    std::mt19937 step_rng = monotile::testing::named_rng("executor tp kill steps");
    int step = 0;
    while (step < kHealthySteps) {
      ++step;
      MT_RETURN_IF_ERROR(r->fill(step_rng));
      MT_RETURN_IF_ERROR(r->enqueue().status());
      MT_RETURN_IF_ERROR(r->decode().after_step(r->stream()));
      MT_RETURN_IF_ERROR(r->device().synchronize(r->stream()));
      if (absl::Status health = r->decode().check_health(); !health.ok()) {
        return absl::InternalError(
            absl::StrCat("healthy step ", step, " gave up a wait: ", health.message()));
      }
    }
    // Both ranks are between steps: rank 1 waits there to be killed; rank 0 kills it and waits
    // for its end (without reaping it: run_forked_ranks does) before stepping on alone.
    MT_RETURN_IF_ERROR(group.all_gather("").status());
    if (group.rank() == 1) {
      for (;;) ::pause();
    }
    pid_t peer = 0;
    if (!absl::SimpleAtoi(pids[1], &peer) || ::kill(peer, SIGKILL) != 0) {
      return absl::InternalError(absl::StrCat("could not kill rank 1's process ", pids[1]));
    }
    siginfo_t ended{};
    while (::waitid(P_PID, static_cast<id_t>(peer), &ended, WEXITED | WNOWAIT) != 0) {
      if (errno != EINTR) return absl::InternalError("could not wait for rank 1's end");
    }
    const auto killed = std::chrono::steady_clock::now();
    auto since_kill = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
    };
    Watchdog watchdog(bound, "rank 0 after rank 1's process was killed");
    while (step < kHealthySteps + 2 * options.check_every) {
      ++step;
      MT_RETURN_IF_ERROR(r->fill(step_rng));
      MT_RETURN_IF_ERROR(r->enqueue().status());
      absl::Status voted = r->decode().after_step(r->stream());
      if (!voted.ok()) {
        out->raised_at = step;
        out->raised_code = voted.code();
        out->raised = std::string(voted.message());
        out->seconds_to_raise = since_kill();
        break;
      }
    }
    if (absl::Status drained = r->device().synchronize(r->stream()); !drained.ok()) {
      return absl::Status(drained.code(),
                          absl::StrCat("rank 0's stream after rank 1's kill: ", drained.message()));
    }
    out->health = std::string(r->decode().check_health().message());
    out->seconds_to_health = since_kill();
    return absl::OkStatus();  // no collective: rank 1 is gone
  }();
  return status.ok() ? "" : std::string(status.message());
}

// The number of waits a health report (LaunchState::check_health's message) names.
inline int recorded_waits(const std::string& health) {
  int named = 0;
  for (size_t pos = health.find(" waited on "); pos != std::string::npos;
       pos = health.find(" waited on ", pos + 1)) {
    ++named;
  }
  return named;
}

// What both twins expect: rank 1 killed by SIGKILL; rank 0 raising Aborted from after_step at the
// first vote after the kill (check_every steps later), saying a TP rank is gone, and its health
// records naming a wait of K2; both within `wait_ns` plus `margin_seconds` of the kill, and the
// health only after the wait's bound had passed.
inline void expect_the_survivor_raised(const ForkedRanks& verdicts, const KillRun& run,
                                       int check_every, int64_t wait_ns, double margin_seconds) {
  EXPECT_EQ(verdicts.rank0, "") << "rank 0";
  EXPECT_EQ(verdicts.rank1, "") << "rank 1 said something before its kill";
  EXPECT_EQ(verdicts.rank1_signal, SIGKILL) << "rank 1's process was not killed";
  EXPECT_EQ(run.raised_at, kHealthySteps + check_every)
      << "rank 0 did not raise at the first vote after the kill (0: never)";
  EXPECT_EQ(run.raised_code, absl::StatusCode::kAborted) << run.raised;
  EXPECT_THAT(run.raised,
              ::testing::HasSubstr(absl::StrCat(
                  "the specialized decode stopped at step ", kHealthySteps + check_every,
                  ": the fail-stop vote over the TP group failed (TP rank 0 could not send to TP "
                  "rank 1: its end of the socket pair is closed (its process ended or left the "
                  "group)), so a TP rank is gone and its exchanges will never come; ")));
  EXPECT_THAT(run.raised,
              ::testing::HasSubstr("; hint: the rank's health records name the wait and the peer; "
                                   "a TP group does not outlive a rank, so restart the engine on "
                                   "every rank"));
  // The first wait to reach its bound records itself, and the waits under way end with no record:
  // the wait for rank 1's o_proj shares, or one that began before it on a flag of this launch that
  // a program waiting for those shares would set (the report then gives the local hint).
  EXPECT_THAT(run.health,
              ::testing::AllOf(
                  ::testing::HasSubstr(
                      absl::StrCat("a hand-off wait gave up after ", wait_ns / 1000000, " ms: ")),
                  ::testing::HasSubstr(" waited on K2 "), ::testing::HasSubstr(": expected tag "),
                  ::testing::AnyOf(
                      ::testing::HasSubstr("hint: that TP rank stalled, died or runs other steps"),
                      ::testing::HasSubstr("hint: every program must be resident at once"))));
  const double bound = static_cast<double>(wait_ns) * 1e-9 + margin_seconds;
  EXPECT_LT(run.seconds_to_raise, bound) << "rank 0 raised late";
  EXPECT_LT(run.seconds_to_health, bound) << "rank 0's waits ended late";
  EXPECT_GE(run.seconds_to_health, static_cast<double>(wait_ns) * 1e-9)
      << "rank 0's waits gave up before their bound";
}

}  // namespace monotile::runtime::decode
