// Internal invariants: MT_CHECK aborts with file:line when our own code is wrong. User mistakes never
// reach it (they are dsl::Error or absl::Status); a failed check is always a monotile bug.
#pragma once

#include "support/source_location.h"
#include <string_view>

namespace monotile {

[[noreturn]] void check_failed(std::string_view condition, std::string_view message,
                               SourceLocation where);

}  // namespace monotile

#define MT_CHECK(cond, ...)                                                         \
  do {                                                                              \
    if (!(cond)) [[unlikely]]                                                       \
      ::monotile::check_failed(#cond, std::string_view{"" __VA_ARGS__},             \
                               ::monotile::SourceLocation::current());                    \
  } while (0)
