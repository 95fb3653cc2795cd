// FailStop over in-process ranks on the CPU device: no rank raises before the vote, every rank
// raises at the same vote once one rank's FAILED word is set, capture steps are not counted.
#include "runtime/decode/fail_stop.h"

#include <atomic>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/decode/in_process_group.h"
#include "runtime/device_cpu.h"

namespace monotile::runtime::decode {
namespace {

// Runs `steps` after_step calls on each of `ranks` ranks; rank `failing` sets its FAILED word
// before step `fail_at` (1-based; 0: never). Returns, per rank, the step at which after_step
// failed (0: none) and its message.
struct Outcome {
  int64_t step = 0;
  std::string message;
};
std::vector<Outcome> run_ranks(int ranks, int failing, int64_t fail_at, int64_t steps, int check_every,
                               int capture_every = 0) {
  std::vector<Outcome> outcomes(static_cast<size_t>(ranks));
  std::vector<absl::Status> statuses = InProcessGroup::run(ranks, [&](Group& group) -> absl::Status {
    std::unique_ptr<Device> device = make_cpu_device();
    absl::StatusOr<DeviceBuffer> word = device->allocate(4);
    if (!word.ok()) return word.status();
    if (absl::Status s = device->fill_bytes(word->address(), 0, 4); !s.ok()) return s;
    absl::StatusOr<Stream> stream = device->create_stream();
    if (!stream.ok()) return stream.status();
    absl::StatusOr<FailStop> stop = FailStop::create(*device, word->address(), group, check_every);
    if (!stop.ok()) return stop.status();
    for (int64_t step = 1; step <= steps; ++step) {
      if (group.rank() == failing && step == fail_at) {
        const int32_t failed = 1;
        if (absl::Status s = device->copy_to_device(word->address(), &failed, 4); !s.ok()) return s;
      }
      const bool capturing = capture_every > 0 && step % capture_every == 0;
      absl::Status s = stop->after_step(*stream, capturing);
      if (!s.ok()) {
        outcomes[static_cast<size_t>(group.rank())] = {step, std::string(s.message())};
        EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
        return absl::OkStatus();
      }
    }
    return absl::OkStatus();
  });
  for (const absl::Status& s : statuses) EXPECT_TRUE(s.ok()) << s;
  return outcomes;
}

TEST(FailStop, HealthyRanksNeverRaise) {
  for (const Outcome& o : run_ranks(3, -1, 0, 64, 16)) EXPECT_EQ(o.step, 0) << o.message;
}

TEST(FailStop, EveryRankRaisesAtTheSameVote) {
  // Rank 2 fails before step 5: its copy lands after step 5's call, it is read at step 6, and the
  // vote at step 16 stops every rank.
  std::vector<Outcome> outcomes = run_ranks(4, 2, 5, 64, 16);
  for (const Outcome& o : outcomes) {
    EXPECT_EQ(o.step, 16);
    EXPECT_NE(o.message.find("TP rank 2 gave up a wait"), std::string::npos) << o.message;
    EXPECT_NE(o.message.find("hint:"), std::string::npos) << o.message;
  }
}

TEST(FailStop, AFailureJustBeforeAVoteIsCaughtByTheNext) {
  // The copy queued at step 16 is read at step 17: the vote at 16 is clean, the one at 32 is not.
  std::vector<Outcome> outcomes = run_ranks(2, 0, 16, 64, 16);
  for (const Outcome& o : outcomes) EXPECT_EQ(o.step, 32) << o.message;
}

TEST(FailStop, CaptureStepsAreNotCounted) {
  // Every 4th call is a capture: 16 counted steps take 21 calls (4, 8, 12, 16, 20 skipped).
  std::vector<Outcome> outcomes = run_ranks(2, 1, 1, 64, 16, 4);
  for (const Outcome& o : outcomes) EXPECT_EQ(o.step, 21) << o.message;
}

TEST(FailStop, RefusesANonPositivePeriod) {
  std::unique_ptr<Device> device = make_cpu_device();
  std::unique_ptr<Group> group = make_single_process_group();
  absl::StatusOr<FailStop> stop = FailStop::create(*device, 0, *group, 0);
  ASSERT_FALSE(stop.ok());
  EXPECT_NE(stop.status().message().find("check_every must be at least 1, got 0"), std::string::npos);
}

}  // namespace
}  // namespace monotile::runtime::decode
