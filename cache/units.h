// Human units for sizes and durations, as the environment and `monotile cache` spell them:
// sizes "500M", "8G", "1.5GiB", "123" (bytes; K/M/G/T are powers of 1024) and durations "30s",
// "15m", "12h", "7d". Parsing rejects anything else (nullopt), never guesses.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace monotile::cache {

std::optional<uint64_t> parse_size(std::string_view text);
std::optional<std::chrono::seconds> parse_duration(std::string_view text);

std::string format_size(uint64_t bytes);                // "1.5 MiB", "812 B"
std::string format_duration(std::chrono::seconds age);  // "3d", "5h", "12m", "40s"

}  // namespace monotile::cache
