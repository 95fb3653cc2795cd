// f16/bf16 conversions against exhaustive decoding and known rounding cases (ties to even,
// overflow to infinity, subnormals, NaN).
#include "dsl/interp/float16.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace monotile::dsl::interp {
namespace {

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
  EXPECT_EQ(round_to_bf16(1.0 + std::ldexp(1.0, -8)), 1.0);                                 // tie: even
  EXPECT_EQ(round_to_bf16(1.0 + 3 * std::ldexp(1.0, -8)), 1.0 + std::ldexp(1.0, -6));       // tie: even up
  EXPECT_EQ(round_to_bf16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30)), 1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(round_to_f16(1.0 + std::ldexp(1.0, -11)), 1.0);
  EXPECT_EQ(round_to_f16(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), 1.0 + std::ldexp(1.0, -10));
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
}  // namespace monotile::dsl::interp
