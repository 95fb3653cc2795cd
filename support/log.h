// Diagnostics for operators: warnings and notes on stderr, each with a "monotile:" prefix. A warning
// that could repeat per kernel (an unwritable cache, a corrupt entry) is printed once per key.
#pragma once

#include <string_view>

namespace monotile {

enum class LogLevel { kQuiet = 0, kWarning = 1, kInfo = 2, kDebug = 3 };

// The level comes from MONOTILE_LOG (quiet, warning, info, debug); warning when unset.
LogLevel log_level();

void log_warning(std::string_view message);
void log_info(std::string_view message);
void log_debug(std::string_view message);

// Prints `message` as a warning the first time `once_key` is seen in this process; later calls with
// the same key print nothing. Returns whether it printed.
bool log_warning_once(std::string_view once_key, std::string_view message);

}  // namespace monotile
