// `monotile cache`: inspect and maintain the kernel cache directory (stats, list, verify, prune,
// clear, dir). Exit status: 0 done, 1 a problem found or an operation failed (verify: any bad
// entry), 2 a usage error. Works on MONOTILE_CACHE_DIR's directory, or --dir DIR (e.g. a bundle).
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_replace.h"
#include "cache/cache.h"
#include "cache/layout.h"
#include "cache/maintenance.h"
#include "cache/units.h"
#include "support/strings.h"
#include "tools/command_flags.h"
#include "tools/commands.h"

ABSL_FLAG(std::optional<std::string>, dir, std::nullopt, "the cache folder to work on");
ABSL_FLAG(bool, zero, false, "stats: reset the counters");
ABSL_FLAG(bool, remove, false, "verify: delete the bad entries");
ABSL_FLAG(std::string, max_size, "", "prune: evict down to this size");
ABSL_FLAG(std::string, max_age, "", "prune: evict the entries unused this long");

namespace monotile::tools {
namespace {

using cache::format_duration;
using cache::format_size;

constexpr const char* kUsage =
    "usage: monotile cache [--dir DIR] <command> [options]\n"
    "\n"
    "commands:\n"
    "  stats [--zero]       counters summed over every process, and the size on disk\n"
    "                       (--zero resets hits, misses, stores, corrupt and evictions)\n"
    "  list                 entries, most recently used first: key, size, age, last use,\n"
    "                       target, kernel\n"
    "  verify [--remove]    read and check every entry; exit status 1 when any is bad\n"
    "                       (--remove deletes the bad ones)\n"
    "  prune [--max-size SIZE] [--max-age AGE]\n"
    "                       evict least recently used entries down to SIZE (\"500M\", \"8G\";\n"
    "                       default: the configured limit) and those unused for AGE (\"12h\", \"7d\")\n"
    "  clear                remove every entry (counters stay)\n"
    "  dir                  print the cache directory\n"
    "\n"
    "--dir DIR works on DIR instead of MONOTILE_CACHE_DIR (default ~/.cache/monotile); list and\n"
    "verify never write, so they are safe on a read-only bundle. See docs/cache.md.\n";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "%s\n\n%s", message.c_str(), kUsage);
  return 2;
}

std::chrono::seconds seconds_since(int64_t unix_seconds) {
  return std::chrono::seconds(std::max<int64_t>(0, static_cast<int64_t>(::time(nullptr)) - unix_seconds));
}

// The options each command takes, beyond --dir.
struct CommandOptions {
  std::string_view command;
  std::vector<std::string_view> flags;
};
constexpr std::string_view kCommands[] = {"stats", "list", "verify", "prune", "clear", "dir"};
const CommandOptions kCommandOptions[] = {{"stats", {"zero"}}, {"verify", {"remove"}}, {"prune", {"max_size", "max_age"}}};

struct Options {
  std::optional<uint64_t> max_size;
  std::optional<std::chrono::seconds> max_age;
};

// The prune limits, or a usage error's status.
std::optional<Options> parse_limits(int* status) {
  Options options;
  const std::string prefix = "monotile cache prune: ";
  if (const std::string text = absl::GetFlag(FLAGS_max_size); !text.empty()) {
    options.max_size = cache::parse_size(text);
    if (!options.max_size) {
      *status = usage_error(prefix + "invalid --max-size \"" + text +
                            "\": expected a size such as \"500M\" or \"8G\" (K, M, G, T are powers of 1024)");
      return std::nullopt;
    }
  }
  if (const std::string text = absl::GetFlag(FLAGS_max_age); !text.empty()) {
    options.max_age = cache::parse_duration(text);
    if (!options.max_age) {
      *status = usage_error(prefix + "invalid --max-age \"" + text + "\": expected a duration such as \"30m\", \"12h\" or \"7d\"");
      return std::nullopt;
    }
  }
  return options;
}

int print_stats(const cache::Config& config, const cache::Layout& layout, bool configured_dir) {
  cache::Stats stats = cache::persisted_stats(layout);
  cache::LayerSummary summary = cache::summarize_entries(layout);
  std::error_code error;
  bool exists = std::filesystem::is_directory(layout.root(), error);
  std::printf("cache directory   %s%s\n", layout.root().c_str(), exists ? "" : " (does not exist yet)");
  if (configured_dir) {
    for (const std::filesystem::path& dir : config.read_only_dirs) {
      cache::LayerSummary layer = cache::summarize_entries(cache::Layout(dir));
      std::printf("read-only layer   %s (%llu entries, %s)\n", dir.c_str(),
                  static_cast<unsigned long long>(layer.entries), format_size(layer.bytes).c_str());
    }
    if (!config.enabled) std::printf("state             disabled by MONOTILE_CACHE_DISABLE\n");
  }
  std::printf("entries           %llu\n", static_cast<unsigned long long>(summary.entries));
  if (configured_dir && config.max_bytes != 0) {
    std::printf("size              %s of %s (%.1f%%)\n", format_size(summary.bytes).c_str(),
                format_size(config.max_bytes).c_str(), 100.0 * summary.bytes / config.max_bytes);
  } else {
    std::printf("size              %s\n", format_size(summary.bytes).c_str());
  }
  uint64_t lookups = stats.hits + stats.misses;
  std::printf("hits              %llu", static_cast<unsigned long long>(stats.hits));
  if (lookups != 0) std::printf(" (%.1f%% of %llu lookups)", 100.0 * stats.hits / lookups,
                                static_cast<unsigned long long>(lookups));
  std::printf("\nmisses            %llu\n", static_cast<unsigned long long>(stats.misses));
  std::printf("stores            %llu\n", static_cast<unsigned long long>(stats.stores));
  std::printf("corrupt removed   %llu\n", static_cast<unsigned long long>(stats.corrupt_removed));
  std::printf("evictions         %llu\n", static_cast<unsigned long long>(stats.evictions));
  return 0;
}

int list(const cache::Layout& layout) {
  std::vector<cache::EntryReport> reports = cache::inspect_entries(layout);
  std::printf("%-32s  %10s  %6s  %6s  %-10s  %s\n", "KEY", "SIZE", "AGE", "USED", "TARGET", "KERNEL");
  uint64_t total = 0;
  for (const cache::EntryReport& report : reports) {
    total += report.size;
    std::string age = report.defect.empty()
                          ? format_duration(seconds_since(static_cast<int64_t>(report.created_unix_ms / 1000)))
                          : "-";
    std::string kernel = report.defect.empty() ? report.kernel : "(bad: " + report.defect + ")";
    std::printf("%-32s  %10s  %6s  %6s  %-10s  %s\n", report.key.hex().c_str(), format_size(report.size).c_str(),
                age.c_str(), format_duration(seconds_since(report.last_used.tv_sec)).c_str(),
                report.target.empty() ? "-" : report.target.c_str(), kernel.empty() ? "-" : kernel.c_str());
  }
  std::printf("%zu entries, %s\n", reports.size(), format_size(total).c_str());
  return 0;
}

int verify(const cache::Layout& layout, bool remove) {
  cache::VerifyResult result = cache::verify_entries(layout, remove);
  for (const cache::EntryReport& bad : result.bad) {
    std::printf("bad entry %s \"%s\": %s\n", bad.key.hex().c_str(), bad.path.c_str(), bad.defect.c_str());
  }
  std::printf("checked %llu entries: %zu bad", static_cast<unsigned long long>(result.checked), result.bad.size());
  if (remove) std::printf(", %llu removed", static_cast<unsigned long long>(result.removed));
  if (!remove && !result.bad.empty()) std::printf(" (run `monotile cache verify --remove` to delete them)");
  std::printf("\n");
  return result.bad.empty() ? 0 : 1;
}

}  // namespace

int cache_command(Args args) {
  const ParsedArgs parsed = parse_command_flags({.command = "monotile cache", .file = __FILE__, .usage = kUsage}, args);
  if (parsed.exit_status) return *parsed.exit_status;
  if (parsed.positional.empty()) return usage_error("monotile cache: missing command");
  if (parsed.positional.size() > 1) {
    return usage_error("monotile cache: one command expected, got \"" + parsed.positional[0] + "\" and \"" +
                       parsed.positional[1] + "\"");
  }
  const std::string& command = parsed.positional[0];
  if (command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (std::find(std::begin(kCommands), std::end(kCommands), command) == std::end(kCommands)) {
    return usage_error("monotile cache: unknown command \"" + command +
                       "\"; expected stats, list, verify, prune, clear or dir");
  }
  for (const CommandOptions& owner : kCommandOptions) {
    for (std::string_view flag : owner.flags) {
      if (owner.command != command && parsed.given.contains(std::string(flag))) {
        return usage_error("monotile cache " + command + ": --" + absl::StrReplaceAll(to_absl(flag), {{"_", "-"}}) +
                           " is an option of " + std::string(owner.command) + ", not of " + command +
                           "; hint: monotile cache --help lists each command's options");
      }
    }
  }
  int status = 0;
  std::optional<Options> options = parse_limits(&status);
  if (!options) return status;
  const std::optional<std::string> dir_flag = absl::GetFlag(FLAGS_dir);
  const std::optional<std::filesystem::path> dir_option =
      dir_flag ? std::optional<std::filesystem::path>(*dir_flag) : std::nullopt;

  cache::Config config = cache::Config::from_environment();
  std::filesystem::path dir = dir_option.value_or(config.writable_dir);
  if (dir.empty()) {
    std::fprintf(stderr, "monotile cache: no cache directory (MONOTILE_CACHE_DIR is set but empty); "
                         "hint: pass --dir DIR\n");
    return 1;
  }
  cache::Layout layout(dir);
  if (command == "dir") {
    std::printf("%s\n", dir.c_str());
    return 0;
  }
  if (command == "stats") {
    if (absl::GetFlag(FLAGS_zero)) {
      if (absl::Status zeroed = cache::zero_stats(layout); !zeroed.ok()) {
        std::fprintf(stderr, "monotile cache stats: cannot zero the counters: %s\n",
                     std::string(zeroed.message()).c_str());
        return 1;
      }
    }
    return print_stats(config, layout, !dir_option.has_value());
  }
  if (command == "list") return list(layout);
  if (command == "verify") return verify(layout, absl::GetFlag(FLAGS_remove));
  if (command == "prune") {
    std::optional<uint64_t> max_size = options->max_size;
    if (!max_size && !options->max_age && config.max_bytes != 0) max_size = config.max_bytes;
    cache::EvictionResult result = cache::prune_entries(layout, max_size, options->max_age);
    std::printf("removed %llu entries (%s), kept %llu (%s)\n",
                static_cast<unsigned long long>(result.removed_entries), format_size(result.removed_bytes).c_str(),
                static_cast<unsigned long long>(result.kept_entries), format_size(result.kept_bytes).c_str());
    return 0;
  }
  cache::EvictionResult result = cache::clear_entries(layout);  // "clear"
  std::printf("removed %llu entries (%s)\n", static_cast<unsigned long long>(result.removed_entries),
              format_size(result.removed_bytes).c_str());
  return 0;
}

}  // namespace monotile::tools
