// Keys: hex round trip, an injective and stable preimage, order-insensitive sets, readable text.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "cache/cache.h"

namespace monotile::cache {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Key, HexRoundTrips) {
  Key key{0x0123456789abcdefULL, 0xfedcba9876543210ULL};
  EXPECT_EQ(key.hex(), "0123456789abcdeffedcba9876543210");
  EXPECT_EQ(Key::from_hex(key.hex()), key);
  EXPECT_EQ(Key::from_hex("0123456789ABCDEFFEDCBA9876543210"), key);
}

TEST(Key, FromHexRejectsWrongLengthAndDigits) {
  EXPECT_FALSE(Key::from_hex("0123"));
  EXPECT_FALSE(Key::from_hex("0123456789abcdeffedcba987654321g"));
  EXPECT_FALSE(Key::from_hex(""));
}

TEST(KeyBuilder, PreimageStartsWithTheFormatVersion) {
  KeyBuilder builder;
  EXPECT_EQ(builder.preimage(), "monotile-cache-key " + std::to_string(kFormatVersion) + "\n");
}

TEST(KeyBuilder, FieldBoundariesChangeTheKey) {
  KeyBuilder a, b, c;
  a.add("a", "bc");
  b.add("ab", "c");
  c.add("a", "b").add("c", "");
  EXPECT_NE(a.preimage(), b.preimage());
  EXPECT_FALSE(a.key() == b.key());
  EXPECT_FALSE(a.key() == c.key());
}

TEST(KeyBuilder, FieldOrderChangesTheKey) {
  KeyBuilder a, b;
  a.add("x", "1").add("y", "2");
  b.add("y", "2").add("x", "1");
  EXPECT_FALSE(a.key() == b.key());
}

TEST(KeyBuilder, KeyIsStableAcrossReleases) {
  // Pinned: changing the preimage encoding or the hash must bump kFormatVersion deliberately.
  KeyBuilder builder;
  builder.add("source", "int x;").add("target", "sm_90a");
  EXPECT_EQ(builder.preimage(), "monotile-cache-key 1\n6:source 6:int x;\n6:target 6:sm_90a\n");
  EXPECT_EQ(builder.key().hex(), "2f26ced9a73b3a82968b6bd6f7b1dda2");
}

TEST(KeyBuilder, SortedFieldIgnoresGatheringOrder) {
  KeyBuilder a, b, c;
  a.add_sorted("options", {"-O3", "-arch=sm_90a", "-v"});
  b.add_sorted("options", {"-v", "-O3", "-arch=sm_90a"});
  c.add_sorted("options", {"-O3", "-arch=sm_90a -v"});
  EXPECT_EQ(a.key(), b.key());
  EXPECT_FALSE(a.key() == c.key());
}

TEST(KeyBuilder, TextShowsShortValuesAndAbbreviatesLongOnes) {
  KeyBuilder builder;
  std::string source = "extern \"C\" __global__ void k() {\n" + std::string(5000, ' ') + "}\n";
  builder.add("target", "sm_90a").add("source", source);
  std::string text = builder.text();
  EXPECT_THAT(text, HasSubstr("target = sm_90a\n"));
  EXPECT_THAT(text, HasSubstr("source = extern \"C\" __global__ void k() {\\n"));
  EXPECT_THAT(text, HasSubstr(absl::StrCat("[", source.size(), " bytes, xxh3 ")));
  EXPECT_THAT(text, Not(HasSubstr(std::string(100, ' '))));
}

TEST(KeyBuilderDeathTest, AddingANameTwiceAborts) {
  KeyBuilder builder;
  builder.add("target", "sm_90a");
  EXPECT_DEATH(builder.add("target", "gfx90a"), "a key field name is added twice");
}

}  // namespace
}  // namespace monotile::cache
