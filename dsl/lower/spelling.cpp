// Picks the vendor's spelling table for a target.
#include "dsl/lower/spelling.h"

#include "support/check.h"

namespace monotile::dsl::lower {

const Spelling& spelling_for(const Target& target) {
  MT_CHECK(target.vendor() != Vendor::kCpu, "no GPU spelling for the cpu target");
  return target.vendor() == Vendor::kNvidia ? cuda_spelling() : hip_spelling();
}

bool has_grid_dependency_wait(const Target& target) {
  if (target.vendor() == Vendor::kCpu) return false;
  const Spelling& spelling = spelling_for(target);
  return spelling.wait_grid_dependency != nullptr && !spelling.wait_grid_dependency(target).empty();
}

}  // namespace monotile::dsl::lower
