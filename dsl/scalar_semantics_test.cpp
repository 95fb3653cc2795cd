// The scalar semantics' edge cases: comparisons and min/max with NaN and signed zeros, the NaN-last
// order, and f16/bf16/f32 rounding (exhaustive round trips, ties to even, overflow to infinity,
// subnormals, NaN).
#include "dsl/scalar_semantics.h"

#include <bit>
#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace monotile::dsl {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Compare, NanIsUnorderedAndOnlyNotEqualHolds) {
  for (CmpPredicate predicate : {CmpPredicate::kEq, CmpPredicate::kLt, CmpPredicate::kLe,
                                 CmpPredicate::kGt, CmpPredicate::kGe}) {
    EXPECT_FALSE(compare(predicate, kNan, 1.0)) << cmp_name(predicate);
    EXPECT_FALSE(compare(predicate, 1.0, kNan)) << cmp_name(predicate);
    EXPECT_FALSE(compare(predicate, kNan, kNan)) << cmp_name(predicate);
  }
  EXPECT_TRUE(compare(CmpPredicate::kNe, kNan, kNan));
  EXPECT_TRUE(compare(CmpPredicate::kNe, kNan, 1.0));
}

TEST(Compare, SignedZerosAreEqual) {
  EXPECT_TRUE(compare(CmpPredicate::kEq, -0.0, 0.0));
  EXPECT_FALSE(compare(CmpPredicate::kLt, -0.0, 0.0));
  EXPECT_TRUE(compare(CmpPredicate::kGe, -0.0, 0.0));
}

TEST(Compare, IntegersAsSigned64) {
  EXPECT_TRUE(compare(CmpPredicate::kLt, int64_t{-1}, int64_t{0}));
  EXPECT_TRUE(
      compare(CmpPredicate::kGt, int64_t{4294967295}, int64_t{0}));  // u32 max, zero-extended
  EXPECT_TRUE(compare(CmpPredicate::kLe, int64_t{7}, int64_t{7}));
  EXPECT_FALSE(compare(CmpPredicate::kNe, int64_t{7}, int64_t{7}));
}

TEST(FloatMinMax, NanInEitherOperandGivesNan) {
  EXPECT_TRUE(std::isnan(float_min(kNan, 1.0)));
  EXPECT_TRUE(std::isnan(float_min(1.0, kNan)));
  EXPECT_TRUE(std::isnan(float_max(kNan, -kInf)));
  EXPECT_TRUE(std::isnan(float_max(kInf, kNan)));
  EXPECT_TRUE(std::isnan(float_max(kNan, kNan)));
}

TEST(FloatMinMax, NanResultIsThePositiveQuietNan) {
  const double result = float_min(-std::nan("7"), 1.0);
  EXPECT_FALSE(std::signbit(result));
  EXPECT_EQ(std::bit_cast<uint64_t>(result), std::bit_cast<uint64_t>(kNan));
}

TEST(FloatMinMax, NegativeZeroIsBelowPositiveZeroInEitherOrder) {
  EXPECT_TRUE(std::signbit(float_min(-0.0, 0.0)));
  EXPECT_TRUE(std::signbit(float_min(0.0, -0.0)));
  EXPECT_FALSE(std::signbit(float_max(-0.0, 0.0)));
  EXPECT_FALSE(std::signbit(float_max(0.0, -0.0)));
}

TEST(FloatMinMax, OrdinaryValuesAndInfinities) {
  EXPECT_EQ(float_min(-2.5, 3.0), -2.5);
  EXPECT_EQ(float_max(-2.5, 3.0), 3.0);
  EXPECT_EQ(float_min(-kInf, -1e308), -kInf);
  EXPECT_EQ(float_max(kInf, 1e308), kInf);
  EXPECT_EQ(float_min(std::ldexp(1.0, -1074), 0.0), 0.0);  // the smallest subnormal is above zero
}

TEST(NanLastLess, NanIsGreaterThanEveryNumber) {
  EXPECT_TRUE(nan_last_less(kInf, kNan));
  EXPECT_FALSE(nan_last_less(kNan, kInf));
  EXPECT_FALSE(nan_last_less(kNan, kNan));
  EXPECT_TRUE(nan_last_less(-kInf, 0.0));
  EXPECT_FALSE(nan_last_less(-0.0, 0.0));  // zeros tie: the lower index wins
  EXPECT_FALSE(nan_last_less(0.0, -0.0));
}

TEST(RoundToDtype, F32RoundsTiesToEvenAndOverflows) {
  const double tie = 1.0 + std::ldexp(1.0, -24);  // halfway between 1 and the next f32
  EXPECT_EQ(round_to_dtype(ScalarType::kF32, tie), 1.0);
  EXPECT_EQ(round_to_dtype(ScalarType::kF32, 1.0 + 3 * std::ldexp(1.0, -24)),
            1.0 + std::ldexp(1.0, -22));
  EXPECT_EQ(round_to_dtype(ScalarType::kF32, 1e39), kInf);
  EXPECT_EQ(round_to_dtype(ScalarType::kF32, std::ldexp(1.0, -149)),
            std::ldexp(1.0, -149));                                         // subnormal
  EXPECT_EQ(round_to_dtype(ScalarType::kF32, std::ldexp(1.0, -150)), 0.0);  // tie to zero
}

TEST(RoundToDtype, SixteenBitTypesMatchTheirBitConversions) {
  for (double value :
       {1.0 + std::ldexp(1.0, -8), 65519.99, 65520.0, std::ldexp(1.0, -25), -3.0e38, 1e-40}) {
    EXPECT_EQ(round_to_dtype(ScalarType::kF16, value), round_to_f16(value)) << value;
    EXPECT_EQ(round_to_dtype(ScalarType::kBf16, value), round_to_bf16(value)) << value;
  }
}

TEST(RoundToDtype, KeepsSignedZerosAndNanConstants) {
  EXPECT_TRUE(std::signbit(round_to_dtype(ScalarType::kBf16, -0.0)));
  EXPECT_TRUE(
      std::signbit(round_to_dtype(ScalarType::kF16, -std::ldexp(1.0, -30))));  // underflows to -0
  const double nan = std::nan("12345");
  EXPECT_EQ(std::bit_cast<uint64_t>(round_to_dtype(ScalarType::kBf16, nan)),
            std::bit_cast<uint64_t>(nan));
  EXPECT_EQ(round_to_dtype(ScalarType::kF64, 0.1), 0.1);
}

TEST(RoundToDtype, OverflowsToSignedInfinity) {
  EXPECT_EQ(round_to_dtype(ScalarType::kF16, -65520.0), -kInf);
  EXPECT_EQ(round_to_dtype(ScalarType::kBf16, 3.4e38), kInf);  // above bf16's max, below f32's
}

TEST(Float16, EveryF16PatternRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const double value = f16_bits_to_double(static_cast<uint16_t>(bits));
    if (std::isnan(value)) continue;
    EXPECT_EQ(f16_bits_from_double(value), bits) << std::hex << bits;
  }
}

TEST(Float16, EveryBf16PatternRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const double value = bf16_bits_to_double(static_cast<uint16_t>(bits));
    if (std::isnan(value)) continue;
    EXPECT_EQ(bf16_bits_from_double(value), bits) << std::hex << bits;
  }
}

TEST(Float16, RoundsToNearestEven) {
  EXPECT_EQ(round_to_bf16(1.0 + std::ldexp(1.0, -8)), 1.0);  // tie: even
  EXPECT_EQ(round_to_bf16(1.0 + 3 * std::ldexp(1.0, -8)),
            1.0 + std::ldexp(1.0, -6));  // tie: even up
  EXPECT_EQ(round_to_bf16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30)),
            1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(round_to_f16(1.0 + std::ldexp(1.0, -11)), 1.0);
  EXPECT_EQ(round_to_f16(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)),
            1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(round_to_f16(2049.0), 2048.0);
  EXPECT_EQ(round_to_f16(2051.0), 2052.0);
}

TEST(Float16, OverflowsToInfinityAndKeepsSubnormals) {
  EXPECT_EQ(round_to_f16(65504.0), 65504.0);
  EXPECT_EQ(round_to_f16(65519.99), 65504.0);
  EXPECT_TRUE(std::isinf(round_to_f16(65520.0)));
  EXPECT_EQ(f16_bits_from_double(std::ldexp(1.0, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(f16_bits_from_double(std::ldexp(1.0, -25)), 0x0000);  // tie to even (zero)
  EXPECT_EQ(f16_bits_from_double(-0.0), 0x8000);
  EXPECT_TRUE(std::isinf(round_to_bf16(std::numeric_limits<double>::max())));
  EXPECT_EQ(bf16_bits_from_double(std::ldexp(1.0, -133)), 0x0001);
}

TEST(Float16, NanKeepsSignAndPayload) {
  EXPECT_EQ(f16_bits_from_double(f16_bits_to_double(0x7e01)), 0x7e01);
  EXPECT_EQ(f16_bits_from_double(f16_bits_to_double(0xfe00)), 0xfe00);
  EXPECT_EQ(bf16_bits_from_double(bf16_bits_to_double(0xffc1)), 0xffc1);
  EXPECT_EQ(bf16_bits_from_double(std::nan("")), 0x7fc0);
}

TEST(Float16, NanStaysNan) {
  EXPECT_TRUE(std::isnan(round_to_f16(std::nan(""))));
  EXPECT_TRUE(std::isnan(round_to_bf16(std::nan(""))));
  EXPECT_TRUE(std::isnan(f16_bits_to_double(0x7e00)));
}

}  // namespace
}  // namespace monotile::dsl
