// Sizes and durations as users write them, and what is refused.
#include <gtest/gtest.h>

#include "cache/units.h"

namespace monotile::cache {
namespace {

TEST(Units, ParsesSizes) {
  EXPECT_EQ(parse_size("123"), 123u);
  EXPECT_EQ(parse_size("500M"), 500ull << 20);
  EXPECT_EQ(parse_size("8G"), 8ull << 30);
  EXPECT_EQ(parse_size("1.5GiB"), 3ull << 29);
  EXPECT_EQ(parse_size("64k"), 64ull << 10);
  EXPECT_EQ(parse_size("2TB"), 2ull << 40);
  EXPECT_EQ(parse_size("10B"), 10u);
  EXPECT_EQ(parse_size("0"), 0u);
}

TEST(Units, RefusesMalformedSizes) {
  for (const char* text : {"", "M", "12X", "-5M", "1.2.3G", "5 G", "8GG", "."}) {
    EXPECT_FALSE(parse_size(text)) << text;
  }
}

TEST(Units, ParsesDurations) {
  EXPECT_EQ(parse_duration("30s"), std::chrono::seconds(30));
  EXPECT_EQ(parse_duration("15m"), std::chrono::seconds(900));
  EXPECT_EQ(parse_duration("12h"), std::chrono::seconds(43200));
  EXPECT_EQ(parse_duration("7d"), std::chrono::seconds(604800));
  EXPECT_FALSE(parse_duration("7"));
  EXPECT_FALSE(parse_duration("7w"));
  EXPECT_FALSE(parse_duration("d"));
}

TEST(Units, FormatsSizesAndDurations) {
  EXPECT_EQ(format_size(812), "812 B");
  EXPECT_EQ(format_size(3ull << 19), "1.5 MiB");
  EXPECT_EQ(format_size(8ull << 30), "8.0 GiB");
  EXPECT_EQ(format_duration(std::chrono::seconds(40)), "40s");
  EXPECT_EQ(format_duration(std::chrono::seconds(7200)), "2h");
  EXPECT_EQ(format_duration(std::chrono::seconds(3 * 86400 + 5)), "3d");
}

}  // namespace
}  // namespace monotile::cache
