// A stable 64-bit fingerprint of a program (XXH3-64 over to_text without locations): the same in
// every process and build, unchanged by edits that move a kernel's lines, for cache keys.
#pragma once

#include <cstdint>

#include "dsl/ir.h"

namespace monotile::dsl {

uint64_t program_hash(const Program& program);

}  // namespace monotile::dsl
