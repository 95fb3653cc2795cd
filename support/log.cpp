// stderr logging with a process-wide level read once from MONOTILE_LOG.
#include "support/log.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"

namespace monotile {
namespace {

LogLevel parse_level(const char* text) {
  if (text == nullptr) return LogLevel::kWarning;
  std::string_view value(text);
  if (value == "quiet") return LogLevel::kQuiet;
  if (value == "info") return LogLevel::kInfo;
  if (value == "debug") return LogLevel::kDebug;
  return LogLevel::kWarning;
}

void print(std::string_view tag, std::string_view message) {
  std::fprintf(stderr, "monotile: %.*s%.*s\n", static_cast<int>(tag.size()), tag.data(),
               static_cast<int>(message.size()), message.data());
}

}  // namespace

LogLevel log_level() {
  static const LogLevel level = parse_level(std::getenv("MONOTILE_LOG"));
  return level;
}

void log_warning(std::string_view message) {
  if (log_level() >= LogLevel::kWarning) print("warning: ", message);
}

void log_info(std::string_view message) {
  if (log_level() >= LogLevel::kInfo) print("", message);
}

void log_debug(std::string_view message) {
  if (log_level() >= LogLevel::kDebug) print("debug: ", message);
}

bool log_warning_once(std::string_view once_key, std::string_view message) {
  static absl::Mutex mutex(absl::kConstInit);
  static auto* seen = new absl::flat_hash_set<std::string>();
  {
    absl::MutexLock lock(&mutex);
    if (!seen->insert(std::string(once_key)).second) return false;
  }
  log_warning(message);
  return true;
}

}  // namespace monotile
