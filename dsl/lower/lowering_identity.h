// The identity of the lowering code itself, for cache keys that skip lowering (the JIT's direct
// mode): two processes agree on it only when they run the same lowering.
#pragma once

#include <optional>
#include <string>

namespace monotile::dsl::lower {

// XXH3-128 (32 hex digits) of every loadable segment of the ELF file that holds lower(): code,
// constant tables, relocations and initial data, not debug sections. Any change to what lower()
// runs, including an uncommitted edit, another compiler or other flags, changes it, and so does a
// change anywhere else in that file (a needless miss, never a wrong hit). Monotile's libraries are
// static, so that file is the program or the one shared library holding the whole lowering and the
// DSL passes it calls.
//
// Computed once per process. Nothing when the file cannot be read or no longer holds the code
// this process runs (rebuilt or replaced since it started): the caller then keys nothing on it.
const std::optional<std::string>& lowering_identity();

}  // namespace monotile::dsl::lower
