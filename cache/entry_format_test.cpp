// The entry format: round trip, and every kind of damage detected with a message saying which.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <xxhash.h>

#include "cache/entry_format.h"
#include "cache/testing.h"

namespace monotile::cache {
namespace {

using ::testing::HasSubstr;

EntryHeader header_for(const KeyBuilder& builder) {
  return EntryHeader{kFormatVersion, builder.key(), digest_preimage(builder.preimage()), 1700000000000};
}

std::string message_of(const absl::StatusOr<ParsedEntry>& parsed) {
  EXPECT_FALSE(parsed.ok());
  return std::string(parsed.status().message());
}

TEST(EntryFormat, RoundTrips) {
  KeyBuilder builder = testing::key_for("round_trip");
  Entry entry = testing::entry_of_size(1000);
  entry.metadata["empty"] = "";
  std::string bytes = serialize_entry(header_for(builder), entry);
  auto parsed = parse_entry(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->entry, entry);
  EXPECT_EQ(parsed->header.key, builder.key());
  EXPECT_EQ(parsed->header.preimage, digest_preimage(builder.preimage()));
  EXPECT_EQ(parsed->header.created_unix_ms, 1700000000000u);
}

TEST(EntryFormat, RoundTripsAnEmptyEntry) {
  std::string bytes = serialize_entry(header_for(testing::key_for("empty")), Entry{});
  auto parsed = parse_entry(bytes);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->entry, Entry{});
  EXPECT_EQ(bytes.size(), kEntryHeaderSize + 4 * kSectionHeaderSize + 4 + kChecksumSize);
}

TEST(EntryFormat, PreimageDigestIsIndependentOfTheKey) {
  KeyBuilder builder = testing::key_for("digest");
  PreimageDigest digest = digest_preimage(builder.preimage());
  EXPECT_EQ(digest.size, builder.preimage().size());
  EXPECT_FALSE(digest.high == builder.key().high && digest.low == builder.key().low);
}

TEST(EntryFormat, EveryTruncationIsDetected) {
  std::string bytes = serialize_entry(header_for(testing::key_for("truncated")), testing::entry_of_size(64));
  for (size_t length = 0; length < bytes.size(); ++length) {
    EXPECT_FALSE(parse_entry(std::string_view(bytes).substr(0, length)).ok()) << length;
  }
  EXPECT_THAT(message_of(parse_entry(std::string_view(bytes).substr(0, 10))),
              HasSubstr("truncated: 10 bytes, an entry has at least 80"));
  EXPECT_THAT(message_of(parse_entry(std::string_view(bytes).substr(0, 200))), HasSubstr("checksum mismatch"));
}

TEST(EntryFormat, AFlippedByteAnywhereIsDetected) {
  std::string bytes = serialize_entry(header_for(testing::key_for("flip")), testing::entry_of_size(300));
  for (size_t offset = 0; offset < bytes.size(); ++offset) {
    std::string damaged = bytes;
    damaged[offset] = static_cast<char>(damaged[offset] ^ 0x10);
    EXPECT_FALSE(parse_entry(damaged).ok()) << "offset " << offset;
  }
}

TEST(EntryFormat, ChecksumMismatchSaysSo) {
  std::string bytes = serialize_entry(header_for(testing::key_for("sum")), testing::entry_of_size(300));
  bytes[kEntryHeaderSize + kSectionHeaderSize + 5] ^= 1;  // inside the code object
  EXPECT_THAT(message_of(parse_entry(bytes)),
              HasSubstr("checksum mismatch: stored "));
  EXPECT_THAT(message_of(parse_entry(bytes)), HasSubstr("(a torn write or a damaged disk)"));
}

TEST(EntryFormat, WrongMagicSaysSo) {
  std::string bytes = serialize_entry(header_for(testing::key_for("magic")), testing::entry_of_size(10));
  bytes.replace(0, 8, "\x7f" "ELF\x02\x01\x01\x00", 8);
  EXPECT_THAT(message_of(parse_entry(bytes)),
              HasSubstr("wrong magic \"?ELF????\", expected \"MTKCACHE\" (not a monotile cache entry)"));
}

TEST(EntryFormat, FutureVersionSaysSo) {
  EntryHeader header = header_for(testing::key_for("future"));
  header.version = kFormatVersion + 1;
  std::string bytes = serialize_entry(header, testing::entry_of_size(10));
  EXPECT_THAT(message_of(parse_entry(bytes)),
              HasSubstr("unsupported format version 2, this monotile reads version 1 (written by a newer monotile)"));
}

TEST(EntryFormat, HeaderAloneParsesWithoutThePayload) {
  KeyBuilder builder = testing::key_for("header");
  std::string bytes = serialize_entry(header_for(builder), testing::entry_of_size(100));
  auto header = parse_entry_header(std::string_view(bytes).substr(0, kEntryHeaderSize + kChecksumSize));
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->key, builder.key());
}

// Re-seals `bytes` with a valid checksum, so that only the structural checks can catch a defect.
std::string reseal(std::string bytes) {
  bytes.resize(bytes.size() - kChecksumSize);
  XXH128_hash_t sum = XXH3_128bits(bytes.data(), bytes.size());
  for (uint64_t half : {sum.high64, sum.low64}) {
    for (int i = 0; i < 8; ++i) bytes += static_cast<char>((half >> (8 * i)) & 0xff);
  }
  return bytes;
}

TEST(EntryFormat, ResealedEntryStillParses) {
  std::string bytes = serialize_entry(header_for(testing::key_for("reseal")), testing::entry_of_size(10));
  EXPECT_EQ(reseal(bytes), bytes);
}

TEST(EntryFormat, StructuralDefectsBehindAValidChecksumAreDetected) {
  Entry entry = testing::entry_of_size(10);
  std::string bytes = serialize_entry(header_for(testing::key_for("structure")), entry);

  std::string count = bytes;
  count[12] = 5;  // section_count
  EXPECT_THAT(message_of(parse_entry(reseal(count))), HasSubstr("malformed header: 5 sections, expected 4"));

  std::string tag = bytes;
  tag[kEntryHeaderSize] = 2;  // the code object's tag
  EXPECT_THAT(message_of(parse_entry(reseal(tag))),
              HasSubstr("malformed entry: section tag 2 where 1 (code object) belongs"));

  std::string length = bytes;
  length[kEntryHeaderSize + 4 + 6] = 1;  // a code object length beyond the file
  EXPECT_THAT(message_of(parse_entry(reseal(length))),
              HasSubstr("malformed code object section: its length runs past the end of the entry"));

  std::string trailing = bytes;
  trailing.insert(trailing.size() - kChecksumSize, "xyz");
  EXPECT_THAT(message_of(parse_entry(reseal(trailing))), HasSubstr("malformed entry: 3 bytes after the last section"));
}

TEST(EntryFormat, MalformedMetadataIsDetected) {
  Entry entry;
  entry.metadata = {{"a", "1"}, {"b", "2"}};
  std::string bytes = serialize_entry(header_for(testing::key_for("order")), entry);
  size_t a = bytes.find("a\x01");
  size_t b = bytes.find("b\x01");
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  std::string short_count = bytes;
  short_count[a - 8] = 1;  // the pair count, before the first name's length
  EXPECT_THAT(message_of(parse_entry(reseal(short_count))),
              HasSubstr("malformed metadata: its pairs do not fill the section exactly"));
  std::swap(bytes[a], bytes[b]);  // names now "b", "a"
  EXPECT_THAT(message_of(parse_entry(reseal(bytes))), HasSubstr("malformed metadata: name \"a\" out of order"));
}

}  // namespace
}  // namespace monotile::cache
