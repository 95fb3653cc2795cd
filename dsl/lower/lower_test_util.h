// Test helpers for the lowering: lower a program for a target string, and count lines of a source.
#pragma once

#include <string>
#include <string_view>

#include "dsl/lower/lower.h"
#include "dsl/target.h"
#include "gtest/gtest.h"

namespace monotile::dsl::lower::testing {

inline Target target(std::string_view text) { return Target::parse(text).value(); }

// Lowers `program` for `target_text`, failing the test (and returning an empty kernel) on error.
inline LoweredKernel lowered(const Program& program, std::string_view target_text, LowerOptions options = {}) {
  absl::StatusOr<LoweredKernel> kernel = lower(program, target(target_text), options);
  EXPECT_TRUE(kernel.ok()) << kernel.status();
  return kernel.ok() ? *kernel : LoweredKernel{};
}

inline int count(std::string_view text, std::string_view needle) {
  int found = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos; at = text.find(needle, at + 1)) ++found;
  return found;
}

}  // namespace monotile::dsl::lower::testing
