// Config::from_environment: the documented MONOTILE_CACHE_* variables (docs/cache.md). A value
// that does not parse is warned about once and the default kept: a typo must not turn caching off.
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "cache/cache.h"
#include "cache/units.h"
#include "support/log.h"

namespace monotile::cache {
namespace {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

// $XDG_CACHE_HOME/monotile (only an absolute XDG_CACHE_HOME counts, as the XDG spec says), else
// ~/.cache/monotile with ~ from $HOME or the password database; empty when there is no home.
std::filesystem::path default_dir() {
  if (auto xdg = env("XDG_CACHE_HOME"); xdg && !xdg->empty() && (*xdg)[0] == '/') {
    return std::filesystem::path(*xdg) / "monotile";
  }
  std::string home = env("HOME").value_or("");
  if (home.empty()) {
    if (const passwd* entry = getpwuid(getuid()); entry != nullptr && entry->pw_dir != nullptr) {
      home = entry->pw_dir;
    }
  }
  if (home.empty()) return {};
  return std::filesystem::path(home) / ".cache" / "monotile";
}

void warn_ignored(const char* name, const std::string& value, std::string_view expected) {
  log_warning_once(absl::StrCat("env:", name),
                   absl::StrCat("ignoring ", name, "=\"", value, "\": expected ", std::string(expected)));
}

}  // namespace

Config Config::from_environment() {
  Config config;
  // Set but empty means "no writable directory": read-only layers only.
  if (auto dir = env("MONOTILE_CACHE_DIR")) {
    config.writable_dir = *dir;
  } else {
    config.writable_dir = default_dir();
  }
  if (auto dirs = env("MONOTILE_CACHE_READONLY_DIRS")) {
    size_t start = 0;
    while (start <= dirs->size()) {
      size_t end = dirs->find(':', start);
      if (end == std::string::npos) end = dirs->size();
      if (end > start) config.read_only_dirs.emplace_back(dirs->substr(start, end - start));
      start = end + 1;
    }
  }
  if (auto size = env("MONOTILE_CACHE_MAX_SIZE")) {
    if (auto bytes = parse_size(*size)) {
      config.max_bytes = *bytes;
    } else {
      warn_ignored("MONOTILE_CACHE_MAX_SIZE", *size,
                   "a size such as \"500M\" or \"8G\" (K, M, G, T are powers of 1024; 0 means no limit)");
    }
  }
  if (auto disable = env("MONOTILE_CACHE_DISABLE")) {
    if (*disable == "1" || *disable == "true" || *disable == "yes" || *disable == "on") {
      config.enabled = false;
    } else if (!(disable->empty() || *disable == "0" || *disable == "false" || *disable == "no" ||
                 *disable == "off")) {
      warn_ignored("MONOTILE_CACHE_DISABLE", *disable, "1 (or true, yes, on) to disable, 0 to enable");
    }
  }
  if (auto wait = env("MONOTILE_CACHE_WAIT_TIMEOUT")) {
    char* end = nullptr;
    double seconds = std::strtod(wait->c_str(), &end);
    if (!wait->empty() && end != nullptr && *end == '\0' && seconds >= 0) {
      config.compile_wait_timeout = std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
    } else {
      warn_ignored("MONOTILE_CACHE_WAIT_TIMEOUT", *wait, "a number of seconds such as \"300\"");
    }
  }
  return config;
}

}  // namespace monotile::cache
