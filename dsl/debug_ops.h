// Debugging ops: a device-side assertion and a print, both kept by every simplification pass.
#pragma once

#include <source_location>
#include <string>
#include <vector>

#include "dsl/value.h"

namespace monotile::dsl {

// Fails the launch when any element of `cond` (an i1 tile or scalar) is false: a trap on the GPU,
// an error naming this line and `message` in the interpreter.
void device_assert(const Value& cond, std::string message,
                   std::source_location loc = std::source_location::current());
// Prints `prefix` and the values (each whole tile) from every program instance.
void print(std::string prefix, const std::vector<Value>& values,
           std::source_location loc = std::source_location::current());

}  // namespace monotile::dsl
