// Log annotation: a scan for "<file>(N)" and "<file>:N:" after normalising hiprtc's paths.
#include "jit/diagnostics.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "support/strings.h"

namespace monotile::jit {
namespace {

// hiprtc compiles a copy named ".../comgr-XXXXXX/input/CompileSource" in a temporary folder.
constexpr std::string_view kHiprtcSourceName = "CompileSource";

std::string replace_hiprtc_paths(std::string_view log, std::string_view file_name) {
  std::string out;
  size_t at = 0;
  for (;;) {
    size_t found = log.find(kHiprtcSourceName, at);
    if (found == std::string_view::npos) break;
    size_t begin = found;
    while (begin > at && log[begin - 1] != ' ' && log[begin - 1] != '\n' && log[begin - 1] != '\'' &&
           log[begin - 1] != '"') {
      --begin;
    }
    out.append(log.substr(at, begin - at));
    out.append(file_name);
    at = found + kHiprtcSourceName.size();
  }
  out.append(log.substr(at));
  return out;
}

// The line numbers after each "<file>(" or "<file>:" in the order they first appear.
std::vector<int> referenced_lines(std::string_view log, std::string_view file_name) {
  std::vector<int> lines;
  size_t at = 0;
  while ((at = log.find(file_name, at)) != std::string_view::npos) {
    at += file_name.size();
    if (at >= log.size() || (log[at] != '(' && log[at] != ':')) continue;
    size_t begin = at + 1;
    size_t end = begin;
    while (end < log.size() && log[end] >= '0' && log[end] <= '9') ++end;
    int line = 0;
    if (end == begin || std::from_chars(log.data() + begin, log.data() + end, line).ec != std::errc()) continue;
    if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
  }
  return lines;
}

// The origin covering generated line `line`: the last one starting at or before it.
const dsl::lower::SourceOrigin* origin_of(std::span<const dsl::lower::SourceOrigin> origins, int line) {
  const dsl::lower::SourceOrigin* found = nullptr;
  for (const dsl::lower::SourceOrigin& origin : origins) {
    if (origin.generated_line > line) break;
    found = &origin;
  }
  return found;
}

}  // namespace

std::string annotate_log(std::string_view log, std::string_view source, std::string_view file_name,
                         std::span<const dsl::lower::SourceOrigin> origins, int max_locations, int context) {
  std::string text = replace_hiprtc_paths(log, file_name);
  std::vector<int> lines = referenced_lines(text, file_name);
  if (lines.empty()) return text;
  std::vector<std::string_view> source_lines;
  for (absl::string_view line : absl::StrSplit(to_absl(source), '\n')) source_lines.push_back(to_std(line));
  while (!text.empty() && text.back() == '\n') text.pop_back();
  absl::StrAppend(&text, "\nsource lines the log points at (", to_absl(file_name), "):");
  int shown = 0;
  for (int line : lines) {
    if (line < 1 || line > static_cast<int>(source_lines.size())) continue;
    if (shown++ == max_locations) {
      absl::StrAppend(&text, "\n  ... (more locations not shown)");
      break;
    }
    absl::StrAppend(&text, "\n");
    if (const dsl::lower::SourceOrigin* origin = origin_of(origins, line)) {
      absl::StrAppend(&text, "\n  line ", line, " is from ", origin->loc.str(), ":");
    }
    int first = std::max(1, line - context);
    int last = std::min(static_cast<int>(source_lines.size()), line + context);
    for (int i = first; i <= last; ++i) {
      absl::StrAppend(&text, absl::StrFormat("\n%s %5d | %s", i == line ? ">" : " ", i,
                                             to_absl(source_lines[i - 1])));
    }
  }
  return text;
}

}  // namespace monotile::jit
