// Damaged entries in the writable layer: each kind is detected on lookup, logged once with the
// path and the defect, removed, counted, and rebuilt by the next get_or_compute.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "cache/cache.h"
#include "cache/entry_format.h"
#include "cache/layout.h"
#include "cache/testing.h"
#include "support/files.h"

namespace monotile::cache {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

struct Damage {
  std::string name;
  std::function<std::string(std::string, const KeyBuilder&)> apply;
  std::string expected_message;
};

// Offsets of each section's content in an entry made by testing::entry_of_size(kCodeSize).
constexpr size_t kCodeSize = 1000;
size_t code_offset() { return kEntryHeaderSize + kSectionHeaderSize; }
size_t report_offset(const Entry& e) { return code_offset() + e.code_object.size() + kSectionHeaderSize; }
size_t log_offset(const Entry& e) { return report_offset(e) + e.resource_report.size() + kSectionHeaderSize; }
size_t metadata_offset(const Entry& e) { return log_offset(e) + e.compile_log.size() + kSectionHeaderSize; }

std::string flip(std::string bytes, size_t offset) {
  bytes[offset] = static_cast<char>(bytes[offset] ^ 0x40);
  return bytes;
}

std::vector<Damage> damages() {
  Entry e = testing::entry_of_size(kCodeSize);
  return {
      {"truncated", [](std::string b, const KeyBuilder&) { return b.substr(0, b.size() / 2); }, "checksum mismatch"},
      {"truncated_to_nothing", [](std::string, const KeyBuilder&) { return std::string(); }, "truncated: 0 bytes"},
      {"flipped_header", [](std::string b, const KeyBuilder&) { return flip(b, 20); }, "checksum mismatch"},
      {"flipped_code_object", [](std::string b, const KeyBuilder&) { return flip(b, code_offset() + 500); },
       "checksum mismatch"},
      {"flipped_resource_report", [e](std::string b, const KeyBuilder&) { return flip(b, report_offset(e) + 3); },
       "checksum mismatch"},
      {"flipped_compile_log", [e](std::string b, const KeyBuilder&) { return flip(b, log_offset(e) + 3); },
       "checksum mismatch"},
      {"flipped_metadata", [e](std::string b, const KeyBuilder&) { return flip(b, metadata_offset(e) + 6); },
       "checksum mismatch"},
      {"flipped_checksum", [](std::string b, const KeyBuilder&) { return flip(b, b.size() - 1); }, "checksum mismatch"},
      {"wrong_magic", [](std::string b, const KeyBuilder&) { return "GARBAGE!" + b.substr(8); }, "wrong magic"},
      {"future_version",
       [](std::string, const KeyBuilder& k) {
         EntryHeader header{kFormatVersion + 1, k.key(), digest_preimage(k.preimage()), 0};
         return serialize_entry(header, testing::entry_of_size(kCodeSize));
       },
       "unsupported format version 2"},
      {"preimage_mismatch",
       [](std::string, const KeyBuilder& k) {
         KeyBuilder other = testing::key_for("someone-else");
         EntryHeader header{kFormatVersion, k.key(), digest_preimage(other.preimage()), 0};
         return serialize_entry(header, testing::entry_of_size(kCodeSize, 'x'));
       },
       "preimage digest mismatch: the entry was built from other inputs than this key's"},
      {"key_mismatch",
       [](std::string, const KeyBuilder& k) {
         KeyBuilder other = testing::key_for("someone-else");
         EntryHeader header{kFormatVersion, other.key(), digest_preimage(k.preimage()), 0};
         return serialize_entry(header, testing::entry_of_size(kCodeSize, 'x'));
       },
       "key mismatch: the file holds key "},
  };
}

void PrintTo(const Damage& damage, std::ostream* out) { *out << damage.name; }

class CorruptionTest : public ::testing::TestWithParam<Damage> {};

TEST_P(CorruptionTest, IsDetectedRemovedCountedAndRebuilt) {
  const Damage& damage = GetParam();
  TempDir dir;
  Config config;
  config.writable_dir = dir.path();
  auto cache = Cache::open(config);
  KeyBuilder key = testing::key_for("victim");
  Entry good = testing::entry_of_size(kCodeSize);
  ASSERT_TRUE(cache->store(key, good).ok());
  std::filesystem::path path = Layout(dir.path()).entry_path(key.key());
  ASSERT_TRUE(write_file(path, damage.apply(read_file(path).value(), key)).ok());

  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache->lookup(key));
  EXPECT_FALSE(cache->lookup(key));  // already removed: a plain miss, no second warning
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("bad cache entry \"" + path.string() + "\": " + damage.expected_message));
  EXPECT_THAT(err, HasSubstr("removed it; it will be rebuilt"));
  EXPECT_EQ(err.find("bad cache entry"), err.rfind("bad cache entry"));
  EXPECT_FALSE(std::filesystem::exists(path));
  Stats stats = cache->stats();
  EXPECT_EQ(stats.corrupt_removed, 1u);
  EXPECT_EQ(stats.entries, 0u);
  EXPECT_EQ(stats.bytes, 0u);

  int computes = 0;
  auto rebuilt = cache->get_or_compute(key, [&] {
    ++computes;
    return absl::StatusOr<Entry>(good);
  });
  ASSERT_TRUE(rebuilt.ok());
  EXPECT_EQ(*rebuilt, good);
  EXPECT_EQ(computes, 1);
  EXPECT_EQ(cache->lookup(key), good);
}

INSTANTIATE_TEST_SUITE_P(EveryDamage, CorruptionTest, ::testing::ValuesIn(damages()),
                         [](const ::testing::TestParamInfo<Damage>& info) { return info.param.name; });

}  // namespace
}  // namespace monotile::cache
