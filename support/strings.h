// Bridges between std::string_view and absl::string_view. Debian's Abseil (20220623) is built with
// its own string_view type (ABSL_OPTION_USE_STD_STRING_VIEW 0), so absl::StrCat and Status do not
// take std::string_view directly.
#pragma once

#include <string>
#include <string_view>

#include "absl/strings/string_view.h"

namespace monotile {

inline absl::string_view to_absl(std::string_view text) { return {text.data(), text.size()}; }
inline std::string_view to_std(absl::string_view text) { return {text.data(), text.size()}; }

}  // namespace monotile
