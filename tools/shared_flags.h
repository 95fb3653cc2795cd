// The flags several `monotile` subcommands take (one definition each: Abseil's flags are global by
// name). A subcommand names those it takes (command_flags.h) and gives their defaults: unset is
// nullopt.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(std::optional<std::string>, model);
ABSL_DECLARE_FLAG(std::optional<int>, tp);
ABSL_DECLARE_FLAG(std::optional<int>, rank);
ABSL_DECLARE_FLAG(std::optional<int>, q);
ABSL_DECLARE_FLAG(std::optional<int>, max_rows);
ABSL_DECLARE_FLAG(std::optional<std::string>, target);
ABSL_DECLARE_FLAG(std::string, cache_dir);
ABSL_DECLARE_FLAG(std::optional<int>, jobs);
ABSL_DECLARE_FLAG(std::string, only);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(std::optional<uint64_t>, seed);
ABSL_DECLARE_FLAG(std::optional<std::string>, device);
ABSL_DECLARE_FLAG(bool, check);
ABSL_DECLARE_FLAG(std::optional<int>, requests);
ABSL_DECLARE_FLAG(std::optional<int>, gpu_index);
ABSL_DECLARE_FLAG(bool, k1_linear);
