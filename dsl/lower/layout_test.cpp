// Layouts and axis analysis: the facts that decide access widths and where data moves.
#include "dsl/lower/layout.h"

#include "dsl/dsl.h"
#include "dsl/lower/axis_analysis.h"
#include "dsl/lower/layout_assignment.h"
#include "dsl/lower/lower_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace monotile::dsl::lower {
namespace {

int warp_of(const char* target) { return testing::target(target).warp_size(); }

TEST(Layout, BlockedGivesEachThreadSixteenBytesAlongTheLastDim) {
  for (const char* target : {"sm_90a", "gfx90a"}) {
    int warp = warp_of(target);
    Layout layout = Layout::blocked({4096}, 4, warp, 4);
    EXPECT_EQ(layout.dim(0).spt, 4);
    EXPECT_EQ(layout.dim(0).tpw, warp);
    EXPECT_EQ(layout.dim(0).wpb, 4);
    EXPECT_EQ(layout.num_regs(), 4096 / (warp * 4));
    EXPECT_EQ(layout.replicated_lane_mask(), 0);
    EXPECT_EQ(layout.replicated_warp_mask(), 0);
  }
}

TEST(Layout, SmallTilesReplicateInsteadOfWrapping) {
  int warp = warp_of("gfx90a");
  Layout layout = Layout::blocked({16}, 4, warp, 4);
  EXPECT_EQ(layout.dim(0).tpw, 4);
  EXPECT_EQ(layout.dim(0).wpb, 1);
  EXPECT_EQ(layout.num_regs(), 4);
  EXPECT_EQ(layout.replicated_lane_mask(), (warp - 1) & ~3);
  EXPECT_EQ(layout.replicated_warp_mask(), 3);
}

TEST(Layout, NonPowerOfTwoDimsRepeatTheirPowerOfTwoPart) {
  Layout layout = Layout::blocked({896}, 4, warp_of("sm_90a"), 4);
  EXPECT_EQ(layout.dim(0).cover(), 128);
  EXPECT_EQ(layout.dim(0).reps(), 7);
}

TEST(Layout, SliceFreesTheReducedDimsLanesAndStretchRestoresThem) {
  int warp = warp_of("sm_90a");
  Layout parent = Layout::blocked({8, 256}, 1, warp, 4);
  Layout rows = parent.slice(1);
  EXPECT_EQ(rows.rank(), 1);
  EXPECT_EQ(rows.replicated_lane_mask(), warp - 1);
  Layout column = rows.expand(1);
  EXPECT_TRUE(column.broadcasts_to(parent));
  EXPECT_EQ(column.stretched({8, 256}), parent);
}

TEST(Layout, ScalarIsHeldByEveryThread) {
  Layout scalar = Layout::scalar(warp_of("gfx90a"), 8);
  EXPECT_EQ(scalar.num_regs(), 1);
  EXPECT_EQ(scalar.replicated_lane_mask(), warp_of("gfx90a") - 1);
  EXPECT_EQ(scalar.replicated_warp_mask(), 7);
}

LoweringState analyzed(Program program, const char* target) {
  LoweringState state{std::move(program), testing::target(target), {}, {}, {}, {}, {}};
  assign_layouts(state);
  analyze_axes(state);
  return state;
}

TEST(AxisAnalysis, RowMajorOffsetsAreContiguousAndAlignedAlongRows) {
  Builder b("offsets");
  auto x = b.arg("x", ptr(f32));
  auto offs = col(arange(0, 16)) * 128 + row(arange(0, 64));
  store(x + offs, zeros({16, 64}, f32));
  LoweringState state = analyzed(b.finish(), "sm_90a");
  const Op& store_op = state.program.body.ops.back();
  const AxisInfo& ptr_info = state.axis[store_op.operands[0]];
  EXPECT_EQ(ptr_info.contiguity, (std::vector<int64_t>{1, 64}));
  EXPECT_EQ(ptr_info.divisibility, (std::vector<int64_t>{4, 16}));  // bytes; rows start anywhere
  EXPECT_EQ(ptr_info.constancy, (std::vector<int64_t>{1, 1}));
}

TEST(AxisAnalysis, ComparisonWithAnAlignedBoundIsConstantPerRun) {
  Builder b("mask");
  auto x = b.arg("x", ptr(f32));
  auto offs = arange(0, 256);
  store(x + offs, zeros({256}, f32), offs < 64);
  LoweringState state = analyzed(b.finish(), "sm_90a");
  const Op& store_op = state.program.body.ops.back();
  const AxisInfo& mask = state.axis[store_op.operands[2]];
  EXPECT_EQ(mask.constancy[0], 64);
  EXPECT_FALSE(mask.known_true());
}

TEST(AxisAnalysis, ComparisonDecidedByRangesIsKnownTrue) {
  Builder b("mask");
  auto x = b.arg("x", ptr(f32));
  auto offs = arange(0, 256);
  store(x + offs, zeros({256}, f32), offs < 256);
  LoweringState state = analyzed(b.finish(), "sm_90a");
  EXPECT_TRUE(state.axis[state.program.body.ops.back().operands[2]].known_true());
}

TEST(AxisAnalysis, WrappingArithmeticForgetsItsRange) {
  Builder b("wrap");
  auto x = b.arg("x", ptr(i32));
  store(x, (program_id(0) * 1000000 < 5).to(i32));
  LoweringState state = analyzed(b.finish(), "sm_90a");
  EXPECT_FALSE(state.axis[state.program.body.ops.back().operands[1]].range.has_value());
}

}  // namespace
}  // namespace monotile::dsl::lower
