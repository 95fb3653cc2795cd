// FailStop over in-process ranks on the CPU device: no rank raises before the vote, every rank
// raises at the same vote once one rank's FAILED word is set, capture steps are not counted; a
// rank whose peer is gone (the other end of a socket pair group closed) raises at its next vote.
#include "runtime/decode/fail_stop.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/decode/in_process_group.h"
#include "runtime/decode/socket_pair_group.h"
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

// Rank 0 of a two-rank socket pair group whose other end is closed (rank 1's process ended):
// after_step's calls up to the vote at `check_every`, with this rank's FAILED word set first when
// `failed`. Returns the vote's status.
absl::Status vote_without_the_peer(bool failed, int check_every) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
    return absl::InternalError("socketpair failed");
  ::close(pair[1]);
  SocketPairGroup group(pair[0], 0);
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<DeviceBuffer> word = device->allocate(4);
  if (!word.ok()) return word.status();
  const int32_t value = failed ? 1 : 0;
  if (absl::Status s = device->copy_to_device(word->address(), &value, 4); !s.ok()) return s;
  absl::StatusOr<Stream> stream = device->create_stream();
  if (!stream.ok()) return stream.status();
  absl::StatusOr<FailStop> stop = FailStop::create(*device, word->address(), group, check_every);
  if (!stop.ok()) return stop.status();
  absl::Status voted;
  for (int step = 1; step <= check_every && voted.ok(); ++step) {
    voted = stop->after_step(*stream);
    if (!voted.ok() && step != check_every)
      return absl::InternalError(absl::StrCat("raised before the vote: ", voted.message()));
  }
  ::close(pair[0]);
  return voted;
}

TEST(FailStop, AVoteWithoutThePeerRaisesOnThisRank) {
  const absl::Status voted = vote_without_the_peer(/*failed=*/false, 2);
  EXPECT_EQ(voted.code(), absl::StatusCode::kAborted) << voted;
  EXPECT_EQ(voted.message(),
            "the specialized decode stopped at step 2: the fail-stop vote over the TP group failed "
            "(TP rank 0 could not send to TP rank 1: its end of the socket pair is closed (its "
            "process ended or left the group)), so a TP rank is gone and its exchanges will never "
            "come; this rank has not seen a wait give up yet, its next exchange would; hint: the "
            "rank's health records name the wait and the peer; a TP group does not outlive a "
            "rank, so restart the engine on every rank");
}

TEST(FailStop, AVoteWithoutThePeerSaysThisRankGaveUpAWait) {
  // The FAILED word's copy queued at step 1 is read at step 2, before the vote.
  const absl::Status voted = vote_without_the_peer(/*failed=*/true, 2);
  EXPECT_EQ(voted.code(), absl::StatusCode::kAborted) << voted;
  EXPECT_NE(voted.message().find("so a TP rank is gone and its exchanges will never come; this "
                                 "rank has given up a wait in a layer kernel already; hint: "),
            std::string::npos)
      << voted;
}

}  // namespace
}  // namespace monotile::runtime::decode
