// program_hash: XXH3-64 of the stable text.
#include "dsl/program_hash.h"

#include <string>

#include "dsl/printer.h"
#include "xxhash.h"

namespace monotile::dsl {

uint64_t program_hash(const Program& program) {
  std::string text = to_text(program);
  return XXH3_64bits(text.data(), text.size());
}

}  // namespace monotile::dsl
