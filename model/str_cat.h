// str_cat: absl::StrCat that also takes std::string_view (Debian's Abseil has its own string_view).
#pragma once

#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace monotile::model {

inline absl::string_view str_piece(std::string_view text) { return {text.data(), text.size()}; }
template <typename T>
const T& str_piece(const T& value) {
  return value;
}

template <typename... Args>
std::string str_cat(const Args&... args) {
  return absl::StrCat(str_piece(args)...);
}

}  // namespace monotile::model
