// The cache key of a build: every input that decides the code object, and nothing else (no build
// name, no path, no line number outside the source itself, no launch shape).
#pragma once

#include <string_view>

#include "cache/cache.h"
#include "jit/build.h"

namespace monotile::jit {

// Bumped by hand whenever this library changes what it asks a compiler for (fixed flags, request
// layout, report parsing): old entries then miss instead of being reused.
inline constexpr std::string_view kJitVersion = "jit-2";  // 2: AMD reports SGPR spills apart

// `compiler_identity` is Compiler::key_identity() for the build's target.
cache::KeyBuilder build_key(const Build& build, std::string_view compiler_identity);

}  // namespace monotile::jit
