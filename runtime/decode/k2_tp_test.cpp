// K2 across TP ranks on the interpreter: ranks as threads (InProcessGroup), each with its own CPU
// device, its peer buffer (PeerBuffer) and its shards of one TP 1 case's weights, cut as vLLM cuts
// them (k3_checkpoint.md 3: o_proj's input columns, the shared experts' gate and up rows and their
// down columns, each expert's w1 and w3 rows and w2 columns, up_proj's rows). Its three reductions
// go through PeerExchange (peer_exchange.h). At TP 2, 4 and 8 every rank's outputs are the TP 1
// reference's within the partials' roundings, and bit for bit every other rank's; over two steps
// (the second on the other parity half, nothing zeroed) and from near the epoch's wrap. A rank
// whose peer never sends (absent, or stalled by the fault hook) gives up its waits within their
// bound, records the peer and the tags, and ends, its other waits ending at once with no record;
// a stale flag of an earlier epoch is never taken.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/k2.h"
#include "kernels/k3/k2_test_support.h"
#include "kernels/k3/peer_exchange.h"
#include "model/config.h"
#include "runtime/decode/in_process_group.h"
#include "runtime/decode/k2_tp_test_support.h"
#include "runtime/decode/peer_buffer.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"
#include "runtime/k2_launch.h"
#include "runtime/launch_state.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {
namespace {

// Runs K2 on every rank of `ranks` (rank r's case at r) as threads of an InProcessGroup, each on
// its own CPU device (run_k2_rank).
std::vector<RankSteps> run_k2_ranks(const std::vector<K2Inputs>& ranks, int programs,
                                    const std::vector<int32_t>& epochs,
                                    const std::function<bool(int, size_t)>& skip = nullptr,
                                    const std::function<bool(int, size_t)>& failing = nullptr) {
  std::vector<RankSteps> runs(ranks.size());
  InProcessGroup::run(static_cast<int>(ranks.size()), [&](Group& group) -> absl::Status {
    std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(ProgramCatalog::process()));
    runs[static_cast<size_t>(group.rank())] = run_k2_rank(
        group, *device, ranks[static_cast<size_t>(group.rank())], programs, epochs, skip, failing);
    return absl::OkStatus();
  });
  return runs;
}

struct TpCase {
  int tp = 2;
  int layer = 1;
  int tokens = 4;
  int programs = 3;
  std::vector<int32_t> epochs = {1, 2};
};

std::string name_of(const TpCase& c) {
  return absl::StrCat("tp", c.tp, "_L", c.layer, "_t", c.tokens, "_p", c.programs, "_e",
                      c.epochs.front());
}

class K2Tp : public ::testing::TestWithParam<TpCase> {};

TEST_P(K2Tp, EveryRankHoldsTheTp1ResultBitForBit) {
  const TpCase& c = GetParam();
  const K2Inputs whole =
      kernels::k3::make_k2_inputs({.layer = c.layer, .tokens = c.tokens}, /*interpreter=*/true);
  ASSERT_FALSE(whole.core.empty());
  std::vector<K2Inputs> ranks;
  for (int r = 0; r < c.tp; ++r) ranks.push_back(rank_inputs(whole, c.tp, r));
  const std::vector<RankSteps> runs = run_k2_ranks(ranks, c.programs, c.epochs);
  for (int r = 0; r < c.tp; ++r) {
    const RankSteps& run = runs[static_cast<size_t>(r)];
    ASSERT_TRUE(run.status.ok()) << "rank " << r << ": " << run.status;
    ASSERT_EQ(run.steps.size(), c.epochs.size());
    for (size_t s = 0; s < c.epochs.size(); ++s) {
      SCOPED_TRACE(absl::StrCat("rank ", r, ", epoch ", c.epochs[s]));
      const K2Outputs& got = run.steps[s];
      if (r == 0) kernels::k3::check_k2_outputs(whole, got, c.tp);
      const K2Outputs& first = runs[0].steps[s];
      EXPECT_EQ(got.a, first.a) << "o_proj's reduced a differs from rank 0's";
      EXPECT_EQ(got.prefix, first.prefix);
      EXPECT_EQ(got.y, first.y);
      EXPECT_EQ(got.route_experts, first.route_experts) << "the ranks chose different experts";
      EXPECT_EQ(0, std::memcmp(got.route_weights.data(), first.route_weights.data(),
                               got.route_weights.size() * 4));
      EXPECT_EQ(got.out, first.out) << "the MoE output differs from rank 0's";
      // The second step (the other parity half) writes what the first wrote.
      if (s > 0) {
        EXPECT_EQ(got.out, run.steps[0].out);
      }
    }
  }
}

std::vector<TpCase> cases() {
  return {
      {.tp = 2,
       .layer = 12,
       .tokens = 6,
       .programs = 3},  // a block-write layer: the prefix restarts at a
      {.tp = 4, .layer = 1, .tokens = 4, .programs = 2},
      {.tp = 8, .layer = 5, .tokens = 3, .programs = 2},
      // From the last epoch below the tag's 22-bit wrap, then to 0 in the tag (the i32 epoch goes
      // on), and from the i32's last value to its first.
      {.tp = 2, .layer = 1, .tokens = 2, .programs = 2, .epochs = {(1 << 22) - 1, 1 << 22}},
      {.tp = 2, .layer = 1, .tokens = 1, .programs = 2, .epochs = {INT32_MAX, INT32_MIN}},
  };
}

INSTANTIATE_TEST_SUITE_P(Ranks, K2Tp, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<TpCase>& info) {
                           std::string name = name_of(info.param);
                           std::replace(name.begin(), name.end(), '-', 'm');
                           return name;
                         });

// The waits of a rank whose peer is gone: ranks of TP 2 with waits bounded by `wait_ns` (at 2
// programs a rank, each with o_proj shares, so that the first wait to give up is a peer's).
std::vector<K2Inputs> fault_ranks(int64_t wait_ns, int32_t fault_epoch = 0, int64_t fault_ns = 0,
                                  int tokens = 2) {
  const K2Inputs whole =
      kernels::k3::make_k2_inputs({.layer = 1, .tokens = tokens}, /*interpreter=*/true);
  EXPECT_FALSE(whole.core.empty());
  std::vector<K2Inputs> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(rank_inputs(whole, 2, r));
    ranks.back().build.wait_ns = wait_ns;
  }
  if (fault_ns != 0) {
    ranks[1].build.fault_epoch = fault_epoch;
    ranks[1].build.fault_layer = 128 + whole.c.layer;
    ranks[1].build.fault_ns = fault_ns;
  }
  return ranks;
}

// Epochs 1 and 2 on both ranks, then epoch 3 on rank 0 alone: its half of the peer buffer holds
// rank 1's flags of epoch 1 (same parity, same layer), with that step's data beside them. Rank 0
// must not take them for epoch 3's: its waits give up, recording the stale tag they saw, and the
// launch ends within the bound (plus the interpreter's time for the rest of the launch).
TEST(K2TpFault, AStaleTagOfAnEarlierEpochIsNeverTakenForThisStepsData) {
  constexpr int64_t kWaitNs = 5'000'000'000;  // healthy steps' waits cover the interpreter's pace
  const std::vector<K2Inputs> ranks = fault_ranks(kWaitNs);
  if (HasFailure()) return;
  const std::vector<RankSteps> runs = run_k2_ranks(
      ranks, 2, {1, 2, 3}, [](int rank, size_t step) { return rank == 1 && step == 2; },
      [](int rank, size_t step) { return rank == 0 && step == 2; });
  for (const RankSteps& run : runs) ASSERT_TRUE(run.status.ok()) << run.status;
  ASSERT_EQ(runs[0].health.size(), 3u);
  for (size_t s = 0; s < 2; ++s) {
    for (const RankSteps& run : runs) EXPECT_TRUE(run.health[s].ok()) << run.health[s];
  }
  const int slot = 128 + ranks[0].c.layer;
  EXPECT_THAT(std::string(runs[0].health[2].message()),
              ::testing::AllOf(
                  ::testing::HasSubstr(absl::StrCat(
                      "waited on o_proj's partial sums (region 9) from TP rank 1: expected tag ",
                      kernels::k3::step_tag(3, slot), ", saw ", kernels::k3::step_tag(1, slot))),
                  ::testing::HasSubstr("hint: that TP rank stalled, died or runs other steps")));
  EXPECT_LT(runs[0].seconds[2], kWaitNs * 1e-9 + 10) << "the give-up ends the launch";
}

// Rank 1's K2 stalls its program 0 (the fault hook) for far longer than the waits' bound: rank 0's
// waits for rank 1's shares give up, recorded, and its launch ends long before rank 1's stall does;
// rank 1's own waits on its stalled program give up too. Neither hangs.
TEST(K2TpFault, AStallAtOneRankMakesTheOtherGiveUpWithinTheBound) {
  constexpr int64_t kWaitNs = 500'000'000, kFaultNs = 6'000'000'000;
  const std::vector<K2Inputs> ranks = fault_ranks(kWaitNs, 1, kFaultNs);
  if (HasFailure()) return;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<RankSteps> runs =
      run_k2_ranks(ranks, 2, {1}, nullptr, [](int, size_t) { return true; });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const RankSteps& run : runs) ASSERT_TRUE(run.status.ok()) << run.status;
  ASSERT_EQ(runs[0].health.size(), 1u);
  ASSERT_EQ(runs[1].health.size(), 1u);
  EXPECT_THAT(std::string(runs[0].health[0].message()),
              ::testing::HasSubstr(
                  absl::StrCat("from TP rank 1: expected tag ", kernels::k3::step_tag(1, 129))));
  EXPECT_THAT(std::string(runs[1].health[0].message()),
              ::testing::HasSubstr("a hand-off wait gave up after 500 ms"));
  EXPECT_LT(runs[0].seconds[0], kFaultNs * 1e-9 - 2) << "rank 0 waited for the stalled rank";
  EXPECT_GE(runs[1].seconds[0], kFaultNs * 1e-9) << "the stall ran";
  EXPECT_LT(seconds, kFaultNs * 1e-9 + 20) << "the stalled rank's launch ends once its stall does";
}

// Rank 1 never launches, and rank 0's program 0 is held at its K2's entry (the fault hook) for
// 2 s of the waits' 3 s: program 1 waits on rank 1's o_proj shares from the start and gives up
// first, setting the rank's FAILED word; program 0 reaches its own wait on them 2 s later. That
// wait reads FAILED on its next spin and ends there, with no record: the launch ends about one
// bound after it began, where program 0's wait used to run its own bound to the end (5 s) and
// record itself.
TEST(K2TpFault, AWaitUnderWayWhenAnotherGivesUpEndsAtOnceWithoutARecord) {
  constexpr int64_t kWaitNs = 3'000'000'000, kHeldNs = 2'000'000'000;
  std::vector<K2Inputs> ranks = fault_ranks(kWaitNs);
  if (HasFailure()) return;
  ranks[0].build.fault_epoch = 1;
  ranks[0].build.fault_layer = 128 + ranks[0].c.layer;
  ranks[0].build.fault_ns = kHeldNs;
  const std::vector<RankSteps> runs = run_k2_ranks(
      ranks, 2, {1}, [](int rank, size_t) { return rank == 1; },
      [](int rank, size_t) { return rank == 0; });
  for (const RankSteps& run : runs) ASSERT_TRUE(run.status.ok()) << run.status;
  ASSERT_EQ(runs[0].health.size(), 1u);
  const std::string health(runs[0].health[0].message());
  EXPECT_THAT(health, ::testing::HasSubstr(absl::StrCat(
                          "program 1 waited on o_proj's partial sums (region 9) from TP rank 1: "
                          "expected tag ",
                          kernels::k3::step_tag(1, 128 + ranks[0].c.layer), ", saw 0")));
  EXPECT_THAT(health, ::testing::Not(::testing::HasSubstr("program 0 waited")))
      << "the wait under way when program 1 gave up recorded itself";
  EXPECT_GE(runs[0].seconds[0], kWaitNs * 1e-9) << "the first wait gave up before its bound";
  EXPECT_LT(runs[0].seconds[0], (kWaitNs + kHeldNs / 2) * 1e-9)
      << "program 0's wait ran its own bound after program 1 gave up";
}

}  // namespace
}  // namespace monotile::runtime::decode
