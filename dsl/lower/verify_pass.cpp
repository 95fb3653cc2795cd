// Lowering's verify pass.
#include "dsl/lower/verify_pass.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "dsl/pass_utils.h"
#include "dsl/verifier.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::dsl::lower {

absl::Status verify_for_lowering(const LoweringState& state) {
  const Program& program = state.program;
  const Target& target = state.target;
  std::string where = absl::StrCat("lowering \"", program.name, "\" for ", target.str());
  if (target.vendor() == Vendor::kCpu) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": the cpu target has no generated code; hint: run the program with the interpreter"));
  }
  int warps = program.options.num_warps;
  if (warps <= 0 || (warps & (warps - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": num_warps must be a power of two, got ", warps, "; hint: use 1, 2, 4, 8 or 16"));
  }
  if (warps * target.warp_size() > target.max_threads_per_block()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": num_warps ", warps, " x ", target.warp_size(),
                                                   " threads exceeds the block limit of ",
                                                   target.max_threads_per_block(), " threads; hint: use at most ",
                                                   target.max_threads_per_block() / target.warp_size(), " warps"));
  }
  // A kernel that writes nothing compiles to an empty kernel: always a mistake.
  if (std::none_of(program.body.ops.begin(), program.body.ops.end(), has_side_effect_deep)) {
    const std::string first =
        program.body.ops.empty() ? "" : absl::StrCat(" (its first op is at ", program.body.ops.front().loc.str(), ")");
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": kernel \"", program.name, "\" has no side effect", first,
        ": no store, atomic, print or assert, so it would compile to an empty kernel; hint: store the results with "
        "store(pointer, value)"));
  }
  int pointer_alignment = state.options.pointer_alignment;
  if (pointer_alignment <= 0 || (pointer_alignment & (pointer_alignment - 1)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": pointer_alignment must be a power of two, got ", pointer_alignment));
  }
  for (const Type& type : program.value_types) {
    for (int64_t dim : type.shape) {
      if (dim <= 0) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": a tile of type ", type.str(), " has an empty dim"));
      }
    }
  }
  return with_context(verify_for_target(program, target), where);
}

}  // namespace monotile::dsl::lower
