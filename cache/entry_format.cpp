// Serialization of entries: little-endian integers written byte by byte (portable, unaligned),
// sections in a fixed order, an XXH3-128 checksum over every byte before it.
#include "cache/entry_format.h"

#include <xxhash.h>

#include "absl/strings/str_cat.h"

namespace monotile::cache {
namespace {

// A seed distinct from the key's (0) makes the digest an independent hash of the same preimage.
constexpr uint64_t kPreimageDigestSeed = 0x6d6f6e6f74696c65;  // "monotile"
constexpr uint32_t kSectionCount = 4;
enum SectionTag : uint32_t {
  kCodeObject = 1,
  kResourceReport = 2,
  kCompileLog = 3,
  kMetadata = 4,
};
constexpr std::string_view kSectionNames[] = {"", "code object", "resource report", "compile log",
                                              "metadata"};

void put_u32(std::string& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}
void put_u64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((value >> (8 * i)) & 0xff);
}

// Reads little-endian values from a byte range; any read past the end sets `failed`.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  uint64_t u64() { return take(8); }
  uint32_t u32() { return static_cast<uint32_t>(take(4)); }
  std::string_view bytes(uint64_t size) {
    if (failed_ || size > bytes_.size() - offset_) {
      failed_ = true;
      return {};
    }
    std::string_view out = bytes_.substr(offset_, size);
    offset_ += size;
    return out;
  }
  bool failed() const { return failed_; }
  size_t offset() const { return offset_; }
  size_t remaining() const { return bytes_.size() - offset_; }

 private:
  uint64_t take(int width) {
    std::string_view raw = bytes(width);
    uint64_t value = 0;
    for (int i = width - 1; i >= 0 && !failed_; --i) {
      value = (value << 8) | static_cast<unsigned char>(raw[i]);
    }
    return value;
  }
  std::string_view bytes_;
  size_t offset_ = 0;
  bool failed_ = false;
};

absl::Status defect(std::string_view what) {
  return absl::DataLossError(std::string(what));
}

std::string hex128(uint64_t high, uint64_t low) { return Key{high, low}.hex(); }

std::string serialize_metadata(const std::map<std::string, std::string>& metadata) {
  std::string out;
  put_u32(out, static_cast<uint32_t>(metadata.size()));
  for (const auto& [name, value] : metadata) {
    put_u32(out, static_cast<uint32_t>(name.size()));
    out += name;
    put_u32(out, static_cast<uint32_t>(value.size()));
    out += value;
  }
  return out;
}

absl::Status parse_metadata(std::string_view bytes, std::map<std::string, std::string>& out) {
  Reader reader(bytes);
  uint32_t count = reader.u32();
  for (uint32_t i = 0; i < count && !reader.failed(); ++i) {
    std::string name(reader.bytes(reader.u32()));
    std::string value(reader.bytes(reader.u32()));
    if (reader.failed()) break;
    if (!out.empty() && !(out.rbegin()->first < name)) {
      return defect(absl::StrCat("malformed metadata: name \"", name, "\" out of order"));
    }
    out.emplace(std::move(name), std::move(value));
  }
  if (reader.failed() || reader.remaining() != 0) {
    return defect("malformed metadata: its pairs do not fill the section exactly");
  }
  return absl::OkStatus();
}

}  // namespace

PreimageDigest digest_preimage(std::string_view preimage) {
  XXH128_hash_t hash = XXH3_128bits_withSeed(preimage.data(), preimage.size(), kPreimageDigestSeed);
  return PreimageDigest{preimage.size(), hash.high64, hash.low64};
}

std::string serialize_entry(const EntryHeader& header, const Entry& entry) {
  std::string metadata = serialize_metadata(entry.metadata);
  const std::string* sections[] = {&entry.code_object, &entry.resource_report, &entry.compile_log,
                                   &metadata};
  size_t total = kEntryHeaderSize + kChecksumSize;
  for (const std::string* section : sections) total += kSectionHeaderSize + section->size();
  std::string out;
  out.reserve(total);
  out += kEntryMagic;
  put_u32(out, header.version);
  put_u32(out, kSectionCount);
  put_u64(out, header.key.high);
  put_u64(out, header.key.low);
  put_u64(out, header.preimage.size);
  put_u64(out, header.preimage.high);
  put_u64(out, header.preimage.low);
  put_u64(out, header.created_unix_ms);
  uint32_t tag = kCodeObject;
  for (const std::string* section : sections) {
    put_u32(out, tag++);
    put_u64(out, section->size());
    out += *section;
  }
  XXH128_hash_t checksum = XXH3_128bits(out.data(), out.size());
  put_u64(out, checksum.high64);
  put_u64(out, checksum.low64);
  return out;
}

absl::StatusOr<EntryHeader> parse_entry_header(std::string_view bytes) {
  if (bytes.size() < kEntryHeaderSize + kChecksumSize) {
    return defect(absl::StrCat("truncated: ", bytes.size(), " bytes, an entry has at least ",
                               kEntryHeaderSize + kChecksumSize));
  }
  Reader reader(bytes);
  std::string_view magic = reader.bytes(kEntryMagic.size());
  if (magic != kEntryMagic) {
    std::string shown;
    for (char c : magic) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
    return defect(absl::StrCat("wrong magic \"", shown, "\", expected \"",
                               std::string(kEntryMagic), "\" (not a monotile cache entry)"));
  }
  EntryHeader header;
  header.version = reader.u32();
  if (header.version != kFormatVersion) {
    return defect(absl::StrCat("unsupported format version ", header.version, ", this monotile reads version ",
                               kFormatVersion, header.version > kFormatVersion ? " (written by a newer monotile)" : ""));
  }
  if (uint32_t count = reader.u32(); count != kSectionCount) {
    return defect(absl::StrCat("malformed header: ", count, " sections, expected ", kSectionCount));
  }
  header.key.high = reader.u64();
  header.key.low = reader.u64();
  header.preimage.size = reader.u64();
  header.preimage.high = reader.u64();
  header.preimage.low = reader.u64();
  header.created_unix_ms = reader.u64();
  return header;
}

namespace {

// parse_entry's body. With `code_span` set, the code object is not copied: its offset and size
// in `bytes` are returned instead, so the caller can take it from its own buffer.
absl::StatusOr<ParsedEntry> parse(std::string_view bytes, std::pair<size_t, size_t>* code_span) {
  ParsedEntry parsed;
  auto header = parse_entry_header(bytes);
  if (!header.ok()) return header.status();
  parsed.header = *header;

  std::string_view body = bytes.substr(0, bytes.size() - kChecksumSize);
  Reader trailer(bytes.substr(body.size()));
  uint64_t stored_high = trailer.u64();
  uint64_t stored_low = trailer.u64();
  XXH128_hash_t computed = XXH3_128bits(body.data(), body.size());
  if (computed.high64 != stored_high || computed.low64 != stored_low) {
    return defect(absl::StrCat("checksum mismatch: stored ", hex128(stored_high, stored_low),
                               ", computed ", hex128(computed.high64, computed.low64),
                               " (a torn write or a damaged disk)"));
  }

  Reader reader(body);
  reader.bytes(kEntryHeaderSize);
  std::string* targets[] = {nullptr, &parsed.entry.code_object, &parsed.entry.resource_report,
                            &parsed.entry.compile_log, nullptr};
  std::string_view metadata;
  for (uint32_t expected = kCodeObject; expected <= kMetadata; ++expected) {
    uint32_t tag = reader.u32();
    uint64_t size = reader.u64();
    std::string_view content = reader.bytes(size);
    if (reader.failed()) {
      return defect(absl::StrCat("malformed ", std::string(kSectionNames[expected]),
                                 " section: its length runs past the end of the entry"));
    }
    if (tag != expected) {
      return defect(absl::StrCat("malformed entry: section tag ", tag, " where ", expected,
                                 " (", std::string(kSectionNames[expected]), ") belongs"));
    }
    if (expected == kMetadata) {
      metadata = content;
    } else if (expected == kCodeObject && code_span != nullptr) {
      *code_span = {static_cast<size_t>(content.data() - bytes.data()), content.size()};
    } else {
      targets[expected]->assign(content.data(), content.size());
    }
  }
  if (reader.remaining() != 0) {
    return defect(absl::StrCat("malformed entry: ", reader.remaining(), " bytes after the last section"));
  }
  if (absl::Status status = parse_metadata(metadata, parsed.entry.metadata); !status.ok()) return status;
  return parsed;
}

}  // namespace

absl::StatusOr<ParsedEntry> parse_entry(std::string_view bytes) { return parse(bytes, nullptr); }

absl::StatusOr<ParsedEntry> parse_entry(std::string&& bytes) {
  std::pair<size_t, size_t> code_span;
  absl::StatusOr<ParsedEntry> parsed = parse(bytes, &code_span);
  if (!parsed.ok()) return parsed;
  // The code object is most of an entry: keep it in the buffer already read (one memmove)
  // instead of allocating and faulting in a second buffer of the same size.
  bytes.resize(code_span.first + code_span.second);
  bytes.erase(0, code_span.first);
  parsed->entry.code_object = std::move(bytes);
  return parsed;
}

}  // namespace monotile::cache
