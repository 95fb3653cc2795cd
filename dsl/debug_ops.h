// Debugging ops: a device-side assertion and a print, both kept by every simplification pass.
#pragma once

#include "support/source_location.h"
#include <string>
#include <vector>

#include "dsl/value.h"

namespace monotile::dsl {

// Fails the launch when any element of `cond` (an i1 tile or scalar) is false: a trap on the GPU,
// an error naming this line and `message` in the interpreter.
void device_assert(const Value& cond, std::string message,
                   SourceLocation loc = SourceLocation::current());
// Prints `prefix` and the values (each whole tile) from every program instance.
void print(std::string prefix, const std::vector<Value>& values,
           SourceLocation loc = SourceLocation::current());

}  // namespace monotile::dsl
