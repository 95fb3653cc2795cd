// Parsing and printing of sizes and durations (units.h). Sizes use binary multiples because
// disk budgets are read next to `du -h`, which does too.
#include "cache/units.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace monotile::cache {
namespace {

// A non-negative decimal number (digits with at most one '.') at the start of `text`; the rest
// is left in `text`.
std::optional<double> take_number(std::string_view& text) {
  size_t end = 0;
  bool dot = false;
  while (end < text.size() && ((text[end] >= '0' && text[end] <= '9') || (text[end] == '.' && !dot))) {
    dot = dot || text[end] == '.';
    ++end;
  }
  if (end == 0 || (end == 1 && dot)) return std::nullopt;
  double value = std::strtod(std::string(text.substr(0, end)).c_str(), nullptr);
  text.remove_prefix(end);
  return value;
}

}  // namespace

std::optional<uint64_t> parse_size(std::string_view text) {
  std::optional<double> number = take_number(text);
  if (!number) return std::nullopt;
  double multiplier = 1;
  if (!text.empty()) {
    switch (text[0]) {
      case 'k': case 'K': multiplier = 1024.0; break;
      case 'm': case 'M': multiplier = 1024.0 * 1024; break;
      case 'g': case 'G': multiplier = 1024.0 * 1024 * 1024; break;
      case 't': case 'T': multiplier = 1024.0 * 1024 * 1024 * 1024; break;
      case 'b': case 'B': break;
      default: return std::nullopt;
    }
    if (text[0] != 'b' && text[0] != 'B') text.remove_prefix(1);
    if (text == "iB" || text == "ib" || text == "B" || text == "b") text = {};
    if (!text.empty()) return std::nullopt;
  }
  double bytes = *number * multiplier;
  if (bytes >= 1.8e19) return std::nullopt;
  return static_cast<uint64_t>(std::llround(bytes));
}

std::optional<std::chrono::seconds> parse_duration(std::string_view text) {
  std::optional<double> number = take_number(text);
  if (!number || text.size() != 1) return std::nullopt;
  double seconds = *number;
  switch (text[0]) {
    case 's': break;
    case 'm': seconds *= 60; break;
    case 'h': seconds *= 3600; break;
    case 'd': seconds *= 86400; break;
    default: return std::nullopt;
  }
  return std::chrono::seconds(std::llround(seconds));
}

std::string format_size(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  if (unit == 0) {
    std::snprintf(buffer, sizeof buffer, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buffer, sizeof buffer, "%.1f %s", value, kUnits[unit]);
  }
  return buffer;
}

std::string format_duration(std::chrono::seconds age) {
  long long s = age.count() < 0 ? 0 : age.count();
  if (s >= 86400) return std::to_string(s / 86400) + "d";
  if (s >= 3600) return std::to_string(s / 3600) + "h";
  if (s >= 60) return std::to_string(s / 60) + "m";
  return std::to_string(s) + "s";
}

}  // namespace monotile::cache
