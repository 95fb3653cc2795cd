// The IR's stable textual form, for tests, debugging and the program hash. Values are renumbered
// in definition order, so the text depends only on the program's structure; source locations are
// left out unless asked for, so that editing unrelated lines of a kernel changes nothing.
#pragma once

#include <string>

#include "dsl/ir.h"

namespace monotile::dsl {

// One line per op, nested regions indented:
//   kernel axpy num_warps=4 (%0: ptr<f32> "x", %1: f32 "a") {
//     %2 = program_id axis=0 : i32
//     %3 = for %4, %5, %6, %7 : f32[16] {
//     ^(%8: i32, %9: f32[16]):
//       ...
//       yield %12
//     }
//   }
// with_locations appends " loc(file.cpp:12)" to every op.
std::string to_text(const Program& program, bool with_locations = false);

}  // namespace monotile::dsl
