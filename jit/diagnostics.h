// Compiler logs made readable: hiprtc's temporary paths replaced by the source's name, and the
// generated source lines each diagnostic points at appended with their neighbours, numbered.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "dsl/lower/lower.h"

namespace monotile::jit {

// `file_name` is the name the compiler was given for the source ("kernel.cu"); diagnostics of the
// form `file(12): error` (NVRTC) and `file:12:5: error` (clang/hiprtc) are recognised. At most
// `max_locations` distinct lines are shown, each with `context` lines on either side.
// With `origins`, each location also names the user's file:line the generated line came from.
std::string annotate_log(std::string_view log, std::string_view source, std::string_view file_name,
                         std::span<const dsl::lower::SourceOrigin> origins = {}, int max_locations = 8,
                         int context = 2);

}  // namespace monotile::jit
