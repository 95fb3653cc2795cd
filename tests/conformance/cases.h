// Every conformance case, by op family. The interpreter suite runs all_cases(); a GPU executor runs
// the very same list.
#pragma once

#include <vector>

#include "tests/conformance/conformance_case.h"

namespace monotile::conformance {

std::vector<Case> elementwise_cases();  // arithmetic, comparisons, bitwise, where, fma, ...
std::vector<Case> math_cases();         // exp, log, sqrt, tanh, erf, ... and integer abs/neg
std::vector<Case> convert_cases();      // cast (rounding), bitcast, mxfp4 dequant
std::vector<Case> shape_cases();        // arange, full, program ids, broadcast, reshape, trans, ...
std::vector<Case> memory_cases();       // masked loads/stores, ordered accesses, atomics
std::vector<Case> reduce_cases();       // reductions, arg reductions, scans
std::vector<Case> sort_cases();         // sort, topk
std::vector<Case> dot_cases();          // dot over dtypes and shapes
std::vector<Case> control_cases();      // range, if_, while_, device_assert, i1 logic

std::vector<Case> all_cases();

}  // namespace monotile::conformance
