#include "runtime/decode/tp_reasons.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/decode/in_process_group.h"

namespace monotile::runtime::decode {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

Backbone at_tp(int tp, int rank) {
  Backbone backbone;
  backbone.tp = tp;
  backbone.rank = rank;
  return backbone;
}

TEST(TpReasons, OneRankAtTp1HasNone) {
  auto group = make_single_process_group();
  EXPECT_THAT(tp_reasons(at_tp(1, 0), *group, false), IsEmpty());
  EXPECT_EQ(tp_deployment_reason(1), "");
}

TEST(TpReasons, TheDeploymentAtTp8IsRefusedWithItsReason) {
  EXPECT_EQ(
      tp_deployment_reason(8),
      "TP 8: the kernels' reductions across TP ranks are checked on the CPU interpreter and at TP "
      "2 with two processes on one GPU, not across GPUs yet, so a deployment could return wrong "
      "layer outputs unnoticed; expected TP 1");
}

TEST(TpReasons, ABackboneAtTp8WithoutAGroupIsRefused) {
  auto group = make_single_process_group();
  EXPECT_THAT(
      tp_reasons(at_tp(8, 3), *group, false),
      ElementsAre(
          "TP 8 (rank 3) without a group of its TP ranks: the kernels exchange partial sums "
          "with the other ranks through the group, so alone this rank would return its own "
          "partial sums as each layer's output; expected TP 1, or the group of the 8 TP "
          "ranks"));
}

TEST(TpReasons, TheGroupOfTheBackbonesRanksHasNone) {
  for (int tp : {2, 4, 8}) {
    InProcessGroup ranks(tp);
    for (int rank = 0; rank < tp; ++rank) {
      EXPECT_THAT(tp_reasons(at_tp(tp, rank), ranks.rank(rank), false), IsEmpty())
          << tp << " " << rank;
    }
  }
}

TEST(TpReasons, AGroupThatIsNotTheBackbonesIsRefused) {
  InProcessGroup ranks(2);
  EXPECT_THAT(
      tp_reasons(at_tp(1, 0), ranks.rank(1), false),
      ElementsAre("a group of 2 TP ranks (this one rank 1) for weights of TP 1 rank 0: the "
                  "kernels exchange partial sums with every rank of the group; expected the "
                  "group of the weights' 1 TP ranks, this one their rank 0"));
  EXPECT_THAT(tp_reasons(at_tp(2, 0), ranks.rank(1), false),
              ElementsAre(::testing::StartsWith(
                  "a group of 2 TP ranks (this one rank 1) for weights of TP 2 rank 0")));
  InProcessGroup three(3);
  EXPECT_THAT(
      tp_reasons(at_tp(3, 2), three.rank(2), false),
      ElementsAre(
          "a group of 3 TP ranks: the kernels exchange partial sums among 2, 4 or 8 ranks"));
}

TEST(TpReasons, TheToolsStandInLeavesNone) {
  InProcessGroup ranks(2);
  EXPECT_THAT(tp_reasons(at_tp(2, 0), ranks.rank(0), true), IsEmpty());
  auto group = make_single_process_group();
  EXPECT_THAT(tp_reasons(at_tp(8, 0), *group, true), IsEmpty());
}

TEST(TpReasons, TheStandInsNoteNamesTheRank) {
  EXPECT_EQ(
      other_ranks_stood_in_note(8, 0),
      "TP 8 rank 0 alone: the other ranks' partial sums are stood in by zero in every reduction");
}

}  // namespace
}  // namespace monotile::runtime::decode
