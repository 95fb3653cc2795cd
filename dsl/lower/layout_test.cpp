// Layouts and axis analysis: the facts that decide access widths and where data moves.
#include "dsl/lower/layout.h"

#include "absl/strings/str_cat.h"
#include "dsl/dsl.h"
#include "dsl/lower/axis_analysis.h"
#include "dsl/lower/layout_assignment.h"
#include "dsl/lower/lower_test_util.h"
#include "dsl/lower/matrix_unit.h"
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

// A [48, 8] GEMV tile has three m16 tiles: split over two warps, the emitters gave each warp one and
// the third was never computed (K1's 48-row in_proj tasks on the H200). Uneven splits are refused:
// the warps left over hold copies.
TEST(Layout, AccumulatorWarpsSplitTilesEvenly) {
  for (const char* name : {"sm_90a", "gfx90a"}) {
    const Target target = testing::target(name);
    for (int64_t m : {48, 64, 80, 96, 192}) {
      for (int64_t n : {8, 16, 24}) {
        std::optional<MatrixUnit> unit = choose_matrix_unit(target, ScalarType::kBf16, ScalarType::kBf16, m, n, 64);
        if (!unit) continue;
        for (int warps : {4, 8}) {
          Layout layout = accumulator_layout(*unit, m, n, target.warp_size(), warps);
          SCOPED_TRACE(absl::StrCat(name, " m ", m, " n ", n, " warps ", warps));
          EXPECT_EQ(m % (int64_t{unit->shape.m} * layout.dim(0).wpb), 0);
          EXPECT_EQ(n % (int64_t{unit->shape.n} * layout.dim(1).wpb), 0);
        }
      }
    }
  }
  const Target hopper = testing::target("sm_90a");
  std::optional<MatrixUnit> unit = choose_matrix_unit(hopper, ScalarType::kBf16, ScalarType::kBf16, 64, 8, 64);
  ASSERT_TRUE(unit.has_value());
  EXPECT_EQ(accumulator_layout(*unit, 64, 8, 32, 8).dim(0).wpb, 4);  // four m16 tiles, one a warp
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
