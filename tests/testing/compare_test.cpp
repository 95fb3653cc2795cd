// The agreement rule on the values that made comparisons flaky: infinities, NaN and their mixes.
#include "tests/testing/compare.h"

#include <limits>

#include "gtest/gtest.h"
#include "tests/testing/seed.h"

namespace monotile::testing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr Tolerance kLoose{1e-3, 1e-2};

TEST(Agrees, EqualInfinitiesOfTheSameSignAgree) {
  EXPECT_TRUE(agrees(kInf, kInf, kLoose));
  EXPECT_TRUE(agrees(-kInf, -kInf, kLoose));
}

TEST(Agrees, InfinitiesOfOppositeSignsDisagree) {
  EXPECT_FALSE(agrees(kInf, -kInf, kLoose));
  EXPECT_FALSE(agrees(-kInf, kInf, kLoose));
}

TEST(Agrees, AnInfinityAndAFiniteValueDisagreeWhateverTheTolerance) {
  EXPECT_FALSE(agrees(kInf, 1e308, {kInf, kInf}));
  EXPECT_FALSE(agrees(1e308, -kInf, {kInf, kInf}));
}

TEST(Agrees, NaNAgreesOnlyWhereNaNIsExpected) {
  EXPECT_TRUE(agrees(kNaN, kNaN, kLoose));
  EXPECT_FALSE(agrees(kNaN, 1.0, {kInf, kInf}));
  EXPECT_FALSE(agrees(1.0, kNaN, {kInf, kInf}));
  EXPECT_FALSE(agrees(kNaN, kInf, kLoose));
}

TEST(Agrees, FiniteValuesAreJudgedByAbsolutePlusRelativeTolerance) {
  EXPECT_TRUE(agrees(100.9, 100.0, {0, 1e-2}));
  EXPECT_FALSE(agrees(101.1, 100.0, {0, 1e-2}));
  EXPECT_TRUE(agrees(1e-4, 0.0, {1e-3, 0}));
  EXPECT_FALSE(agrees(2e-3, 0.0, {1e-3, 0}));
}

TEST(TestSeed, CaseSeedsDifferBySaltAndRepeat) {
  EXPECT_EQ(case_seed("a"), case_seed("a"));
  EXPECT_NE(case_seed("a"), case_seed("b"));
  EXPECT_EQ(named_rng("x")(), named_rng("x")());
}

TEST(TestSeed, SuccessiveStreamsOfATestDiffer) {
  std::mt19937 first = case_rng(), second = case_rng();
  EXPECT_NE(first(), second());
}

TEST(TestSeed, ReplayHintNamesTheVariableAndTheSeed) {
  EXPECT_EQ(replay_hint(), "MONOTILE_TEST_SEED=" + std::to_string(test_seed()));
}

}  // namespace
}  // namespace monotile::testing

namespace monotile::testing {
namespace {

// Run only by the CTest case that checks the replay line a failure prints.
TEST(TestSeed, DISABLED_FailsOnPurpose) { ADD_FAILURE() << "a failure on purpose"; }

}  // namespace
}  // namespace monotile::testing
