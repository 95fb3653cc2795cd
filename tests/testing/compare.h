// Whether a computed value agrees with the expected one. NaN agrees only where NaN is expected, an
// infinity only with the same infinity, and finite values within abs + rel * |expected|; a NaN
// or infinity where a finite value is expected never passes.
#pragma once

#include <cmath>

namespace monotile::testing {

struct Tolerance {
  double abs = 0;
  double rel = 0;
};

inline bool agrees(double actual, double expected, Tolerance tolerance) {
  if (std::isnan(expected) || std::isnan(actual)) return std::isnan(expected) && std::isnan(actual);
  if (std::isinf(expected) || std::isinf(actual)) return actual == expected;
  return std::fabs(actual - expected) <= tolerance.abs + tolerance.rel * std::fabs(expected);
}

}  // namespace monotile::testing
