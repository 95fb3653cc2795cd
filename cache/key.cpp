// Keys: the canonical preimage of named fields and its XXH3-128 hash. The preimage is
// "monotile-cache-key <version>\n" then, per field, "<name size>:<name> <value size>:<value>\n";
// the sizes make the encoding injective, so distinct field lists never share a preimage.
#include <xxhash.h>

#include <algorithm>
#include <cstdio>

#include "cache/cache.h"
#include "support/check.h"

namespace monotile::cache {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";
constexpr size_t kShownValueLimit = 100;  // longer values (sources) are abbreviated in text()
constexpr size_t kShownPrefix = 60;

void append_hex64(std::string& out, uint64_t value) {
  for (int shift = 60; shift >= 0; shift -= 4) out += kHexDigits[(value >> shift) & 0xf];
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Printable form of a value prefix: control characters escaped so a field stays on one line.
std::string escaped(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02x", static_cast<unsigned char>(c));
      out += buffer;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string Key::hex() const {
  std::string out;
  out.reserve(32);
  append_hex64(out, high);
  append_hex64(out, low);
  return out;
}

std::optional<Key> Key::from_hex(std::string_view hex) {
  if (hex.size() != 32) return std::nullopt;
  Key key;
  for (size_t i = 0; i < 32; ++i) {
    int digit = hex_value(hex[i]);
    if (digit < 0) return std::nullopt;
    uint64_t& half = i < 16 ? key.high : key.low;
    half = (half << 4) | static_cast<uint64_t>(digit);
  }
  return key;
}

std::string KeyBuilder::preimage_header() {
  return "monotile-cache-key " + std::to_string(kFormatVersion) + "\n";
}

KeyBuilder& KeyBuilder::add(std::string_view name, std::string_view value) {
  for (const auto& field : fields_) {
    MT_CHECK(field.first != name, "a key field name is added twice");
  }
  fields_.emplace_back(std::string(name), std::string(value));
  preimage_ += std::to_string(name.size());
  preimage_ += ':';
  preimage_ += name;
  preimage_ += ' ';
  preimage_ += std::to_string(value.size());
  preimage_ += ':';
  preimage_ += value;
  preimage_ += '\n';
  return *this;
}

KeyBuilder& KeyBuilder::add_sorted(std::string_view name, std::vector<std::string> items) {
  std::sort(items.begin(), items.end());
  std::string value;
  for (const std::string& item : items) {
    value += std::to_string(item.size());
    value += ':';
    value += item;
    value += ';';
  }
  return add(name, value);
}

std::string KeyBuilder::text() const {
  size_t width = 0;
  for (const auto& field : fields_) width = std::max(width, field.first.size());
  std::string out;
  for (const auto& [name, value] : fields_) {
    out += name;
    out.append(width - name.size(), ' ');
    out += " = ";
    bool one_line = value.find('\n') == std::string::npos;
    if (one_line && value.size() <= kShownValueLimit) {
      out += escaped(value);
    } else {
      out += escaped(std::string_view(value).substr(0, kShownPrefix));
      out += "... [" + std::to_string(value.size()) + " bytes, xxh3 ";
      append_hex64(out, XXH3_64bits(value.data(), value.size()));
      out += "]";
    }
    out += '\n';
  }
  return out;
}

Key KeyBuilder::key() const {
  XXH128_hash_t hash = XXH3_128bits(preimage_.data(), preimage_.size());
  return Key{hash.high64, hash.low64};
}

}  // namespace monotile::cache
