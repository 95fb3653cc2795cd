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
  EXPECT_EQ(tp_deployment_reason(8),
            "TP 8: the kernels' reductions do not exchange partial sums between TP ranks yet, so "
            "every rank "
            "would return its own partial sums as each layer's output; expected TP 1");
}

TEST(TpReasons, ABackboneAtTp8WithoutAGroupThatExchangesIsRefused) {
  auto group = make_single_process_group();
  EXPECT_THAT(
      tp_reasons(at_tp(8, 3), *group, false),
      ElementsAre(
          "TP 8 (rank 3) without a group that exchanges partial sums: the kernels' reductions do "
          "not exchange partial sums between TP ranks yet, so this rank would return its own "
          "partial sums as each layer's output; expected TP 1"));
}

TEST(TpReasons, AGroupOfTwoRanksIsRefusedAndSoIsItsBackbone) {
  InProcessGroup ranks(2);
  std::vector<std::string> reasons = tp_reasons(at_tp(2, 1), ranks.rank(1), false);
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_EQ(reasons[0],
            "a group of 2 TP ranks: the kernels' reductions do not exchange partial sums between "
            "TP ranks yet; "
            "expected a group of one rank");
  EXPECT_THAT(reasons[1],
              ::testing::StartsWith("TP 2 (rank 1) without a group that exchanges partial sums"));
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
