// The entry file format: one self-checking byte string per entry (grammar in docs/cache.md).
// parse_entry accepts only what serialize_entry of this kFormatVersion writes, byte for byte:
// any truncation, flipped byte, foreign magic or other version is an error saying what is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cache/cache.h"

namespace monotile::cache {

inline constexpr std::string_view kEntryMagic = "MTKCACHE";

// A second, independent hash of a key's preimage (XXH3-128 with another seed) and its length.
// Stored in the entry so that an entry found under a colliding key is recognised as foreign.
struct PreimageDigest {
  uint64_t size = 0;
  uint64_t high = 0;
  uint64_t low = 0;
  friend bool operator==(const PreimageDigest&, const PreimageDigest&) = default;
};
PreimageDigest digest_preimage(std::string_view preimage);

struct EntryHeader {
  uint32_t version = kFormatVersion;
  Key key;
  PreimageDigest preimage;
  uint64_t created_unix_ms = 0;  // when the entry was compiled; `monotile cache list` shows its age
};

struct ParsedEntry {
  EntryHeader header;
  Entry entry;
};

// Fixed sizes of the format, exposed for tests that damage one part of an entry.
inline constexpr size_t kEntryHeaderSize = 8 + 4 + 4 + 16 + 8 + 16 + 8;  // 64
inline constexpr size_t kSectionHeaderSize = 4 + 8;
inline constexpr size_t kChecksumSize = 16;

std::string serialize_entry(const EntryHeader& header, const Entry& entry);

// Verifies, in this order: length, magic, version, checksum, then the sections' structure.
// Errors are DataLoss with a lower-case description of the defect ("checksum mismatch: ...").
absl::StatusOr<ParsedEntry> parse_entry(std::string_view bytes);
// The same, taking the buffer over for the code object (no second copy of the largest section).
absl::StatusOr<ParsedEntry> parse_entry(std::string&& bytes);

// Only the header (for listing without reading a payload): length, magic and version checked.
absl::StatusOr<EntryHeader> parse_entry_header(std::string_view bytes);

}  // namespace monotile::cache
