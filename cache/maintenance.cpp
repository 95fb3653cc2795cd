// `monotile cache` operations on a directory (maintenance.h). Counter updates only happen where
// the directory already has a stats folder: a bundle never gains one by being looked at.
#include "cache/maintenance.h"

#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "cache/counters.h"
#include "cache/entry_format.h"
#include "cache/file_io.h"

namespace monotile::cache {
namespace {

bool has_counters(const Layout& layout) {
  std::error_code error;
  return std::filesystem::is_directory(layout.stats_dir(), error);
}

void record(const Layout& layout, const CounterDelta& delta) {
  if (!has_counters(layout)) return;
  PersistentCounters(layout.stats_dir()).add(delta).IgnoreError();
}

void correct_size(const Layout& layout) {
  if (!has_counters(layout)) return;
  LayerSummary summary = summarize_entries(layout);
  PersistentCounters(layout.stats_dir()).set_size(summary.bytes, summary.entries).IgnoreError();
}

}  // namespace

std::vector<EntryReport> inspect_entries(const Layout& layout) {
  std::vector<EntryReport> reports;
  for (const EntryFile& file : scan_entry_files(layout)) {
    EntryReport report;
    report.key = file.key;
    report.path = file.path;
    report.size = file.size;
    report.last_used = file.last_used;
    absl::StatusOr<std::string> bytes = read_whole_file(file.path);
    if (!bytes.ok()) {
      if (absl::IsNotFound(bytes.status())) continue;  // evicted since the scan
      report.defect = std::string(bytes.status().message());
    } else if (absl::StatusOr<ParsedEntry> parsed = parse_entry(*bytes); !parsed.ok()) {
      report.defect = std::string(parsed.status().message());
    } else if (!(parsed->header.key == file.key)) {
      report.defect = absl::StrCat("key mismatch: the file holds key ", parsed->header.key.hex());
    } else {
      report.created_unix_ms = parsed->header.created_unix_ms;
      auto field = [&](const char* name) {
        auto it = parsed->entry.metadata.find(name);
        return it == parsed->entry.metadata.end() ? std::string() : it->second;
      };
      report.kernel = field("kernel");
      report.target = field("target");
    }
    reports.push_back(std::move(report));
  }
  std::sort(reports.begin(), reports.end(), [](const EntryReport& a, const EntryReport& b) {
    return a.last_used.tv_sec != b.last_used.tv_sec ? a.last_used.tv_sec > b.last_used.tv_sec
                                                    : a.last_used.tv_nsec > b.last_used.tv_nsec;
  });
  return reports;
}

VerifyResult verify_entries(const Layout& layout, bool remove) {
  VerifyResult result;
  CounterDelta delta;
  for (EntryReport& report : inspect_entries(layout)) {
    ++result.checked;
    if (report.defect.empty()) continue;
    if (remove && unlink(report.path.c_str()) == 0) {
      ++result.removed;
      delta.corrupt += 1;
      delta.bytes -= static_cast<int64_t>(report.size);
      delta.entries -= 1;
    }
    result.bad.push_back(std::move(report));
  }
  if (delta.corrupt != 0) record(layout, delta);
  return result;
}

LayerSummary summarize_entries(const Layout& layout) {
  LayerSummary summary;
  for (const EntryFile& file : scan_entry_files(layout)) {
    ++summary.entries;
    summary.bytes += file.size;
  }
  return summary;
}

EvictionResult prune_entries(const Layout& layout, std::optional<uint64_t> max_bytes,
                             std::optional<std::chrono::seconds> max_age) {
  EvictionResult result = evict_entries(layout, max_bytes, max_age);
  remove_stale_files(layout, kStaleFileAge);
  CounterDelta delta;
  delta.evictions = static_cast<int64_t>(result.removed_entries);
  if (delta.evictions != 0) record(layout, delta);
  correct_size(layout);
  return result;
}

EvictionResult clear_entries(const Layout& layout) {
  EvictionResult result = evict_entries(layout, uint64_t{0}, std::nullopt);
  remove_stale_files(layout, std::chrono::seconds(-1));
  correct_size(layout);
  return result;
}

Stats persisted_stats(const Layout& layout) {
  if (!has_counters(layout)) return {};
  return PersistentCounters(layout.stats_dir()).sum();
}

absl::Status zero_stats(const Layout& layout) {
  if (!has_counters(layout)) return absl::OkStatus();
  return PersistentCounters(layout.stats_dir()).zero_events();
}

}  // namespace monotile::cache
