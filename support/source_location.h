// SourceLocation: std::source_location where the standard library can provide it. libstdc++ 12
// builds it on __builtin_source_location, which clang 14 lacks; there the same facts come from the
// __builtin_FILE/LINE/FUNCTION defaults that both compilers have (column reads 0).
#pragma once

#include <cstdint>

#if __has_builtin(__builtin_source_location)
#include <source_location>
#endif

namespace monotile {

#if __has_builtin(__builtin_source_location)
using SourceLocation = std::source_location;
#else
class SourceLocation {
 public:
  static constexpr SourceLocation current(const char* file = __builtin_FILE(), int line = __builtin_LINE(),
                                          const char* function = __builtin_FUNCTION()) noexcept {
    SourceLocation location;
    location.file_ = file;
    location.line_ = static_cast<uint_least32_t>(line);
    location.function_ = function;
    return location;
  }
  constexpr SourceLocation() noexcept = default;
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr uint_least32_t line() const noexcept { return line_; }
  constexpr uint_least32_t column() const noexcept { return 0; }
  constexpr const char* function_name() const noexcept { return function_; }

 private:
  const char* file_ = "";
  uint_least32_t line_ = 0;
  const char* function_ = "";
};
#endif

}  // namespace monotile
