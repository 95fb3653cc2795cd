// The matrix units' fragment maps checked against each other on the host: the maps are device
// expressions (matrix_unit.cpp), so each unit's are compiled into a host function that lists, for
// every lane and fragment element, A's row and K, B's K and column, and the register path's row
// rep and K slots. A dot whose operands come from registers (emit_dot.cpp) is right only if, for
// every K of an instruction, the lanes that supply it in A and in B agree on one (K lane, slot),
// and the row (column) a register holds is the one the instruction takes there. mma.sync has no
// host emulation, so this is where its register path is checked before it runs on a GPU.
#include "dsl/lower/matrix_unit.h"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dsl/lower/host_emulation_build.h"
#include "dsl/target.h"
#include "gtest/gtest.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

struct UnitCase {
  std::string name;
  std::string target;
  int m, n, k;
};

// One fragment element as the unit's maps place it.
struct Element {
  int lane, e, row_or_col, hardware_k, rep, slot;
};

using Fill = void (*)(int, int, int*);

// Builds `fill(which, lane, out[6 * elements])` from the unit's expressions.
std::string host_source(const MatrixUnit& unit) {
  auto body = [&](int elems, std::string_view row, std::string_view k, std::string_view rep,
                  std::string_view slot) {
    return absl::StrCat("for (int e = 0; e < ", elems, "; ++e) { out[e * 4] = ", to_absl(row),
                        "; out[e * 4 + 1] = ", to_absl(k), "; out[e * 4 + 2] = ", to_absl(rep),
                        "; out[e * 4 + 3] = ", to_absl(slot), "; }");
  };
  return absl::StrCat(
      "extern \"C\" void fill(int which, int lane, int* out) {\n  if (which == 0) { ",
      body(unit.a_elems, unit.a_row, unit.a_k, unit.a_row_rep, unit.a_k_slot), " }\n  else { ",
      body(unit.b_elems, unit.b_col, unit.b_k, "0", unit.b_k_slot), " }\n}\n");
}

class FragmentMaps : public ::testing::TestWithParam<UnitCase> {};

TEST_P(FragmentMaps, RegisterOperandsFeedTheUnitConsistently) {
  const UnitCase& c = GetParam();
  const Target target = Target::parse(c.target).value();
  std::optional<MatrixUnit> unit =
      choose_matrix_unit(target, ScalarType::kBf16, ScalarType::kBf16, c.m, c.n, c.k);
  ASSERT_TRUE(unit.has_value());
  ASSERT_EQ(unit->shape.m, c.m);
  ASSERT_EQ(unit->shape.n, c.n);
  const std::filesystem::path stem =
      std::filesystem::path(::testing::TempDir()) / ("monotile_fragments_" + c.name);
  absl::StatusOr<void*> built =
      testing::build_host_emulation(host_source(*unit), "-std=c++20 -O0 -shared -fPIC", stem);
  ASSERT_TRUE(built.ok()) << built.status();
  auto fill = reinterpret_cast<Fill>(dlsym(*built, "fill"));
  ASSERT_NE(fill, nullptr);

  const int warp = target.warp_size();
  const int slots = unit->shape.k / unit->k_tpw;
  // (hardware K) -> the (K lane, slot) pairs that supply it, per operand.
  std::map<int, std::set<std::pair<int, int>>> supplied[2];
  for (int which = 0; which < 2; ++which) {
    const int elems = which == 0 ? unit->a_elems : unit->b_elems;
    const int lanes = which == 0 ? unit->a_row_tpw : unit->b_col_tpw;
    const int stride = which == 0 ? unit->a_row_lane_stride : unit->b_col_lane_stride;
    for (int lane = 0; lane < warp; ++lane) {
      std::vector<int> out(4 * elems, -1);
      fill(which, lane, out.data());
      const int k_lane = lane / unit->k_lane_stride % unit->k_tpw;
      for (int e = 0; e < elems; ++e) {
        const int row_or_col = out[e * 4], hardware_k = out[e * 4 + 1], rep = out[e * 4 + 2],
                  slot = out[e * 4 + 3];
        SCOPED_TRACE(absl::StrCat(which == 0 ? "A" : "B", " lane ", lane, " element ", e));
        ASSERT_GE(slot, 0);
        ASSERT_LT(slot, slots);
        // The register holds row (column) lane-part + reps * lanes: the one the instruction takes.
        EXPECT_EQ(row_or_col, lane / stride % lanes + rep * lanes);
        supplied[which][hardware_k].insert({k_lane, slot});
      }
    }
  }
  ASSERT_EQ(supplied[0].size(), static_cast<size_t>(unit->shape.k));
  for (int hardware_k = 0; hardware_k < unit->shape.k; ++hardware_k) {
    SCOPED_TRACE(absl::StrCat("hardware K ", hardware_k));
    ASSERT_EQ(supplied[0][hardware_k].size(), 1u)
        << "A's lanes disagree on where this K comes from";
    EXPECT_EQ(supplied[0][hardware_k], supplied[1][hardware_k])
        << "A and B take this K from different registers";
  }
  // Every (K lane, slot) supplies exactly one K: the permutation is a bijection.
  std::set<std::pair<int, int>> all;
  for (const auto& [hardware_k, pairs] : supplied[0]) all.insert(pairs.begin(), pairs.end());
  EXPECT_EQ(all.size(), static_cast<size_t>(unit->shape.k));
}

INSTANTIATE_TEST_SUITE_P(Units, FragmentMaps,
                         ::testing::Values(UnitCase{"mma_m16n8k16", "sm_90a", 16, 8, 16},
                                           UnitCase{"mfma_32x32x8", "gfx90a", 32, 32, 8},
                                           UnitCase{"mfma_16x16x16", "gfx90a", 16, 16, 16}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace monotile::dsl::lower
