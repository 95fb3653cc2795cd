#include "dsl/lower/register_precheck.h"

#include "absl/strings/str_cat.h"
#include "dsl/shape_rules.h"

namespace monotile::dsl::lower {
namespace {

// 32-bit registers per element: f16/bf16 and narrower integers live in one (dsl/lower: "f16/bf16
// live in f32 registers"), 64-bit values and pointers in two.
int64_t registers_per_element(const ElementType& type) {
  if (type.pointer) return 2;
  return scalar_type_bits(type.scalar) > 32 ? 2 : 1;
}

absl::Status check_block(const LoweringState& state, const Block& block, const std::string& where) {
  const int64_t budget = state.target.max_registers_per_thread();
  for (const Op& op : block.ops) {
    for (ValueId result : op.results) {
      const std::optional<Layout>& layout = state.layouts.at(result);
      if (!layout) continue;  // materialized where used, in its users' layouts
      const Type& type = state.program.type_of(result);
      const int64_t registers = layout->num_regs() * registers_per_element(type.element);
      if (registers > budget) {
        return absl::ResourceExhaustedError(absl::StrCat(
            where, ": ", op.loc.str(), ": ", std::string(op_name(op.code)), " makes a tile of ", type.str(), " that needs ",
            registers, " registers per thread (", layout->num_regs(), " elements over ",
            state.program.options.num_warps, " warps of ", state.target.warp_size(), "), the target has ", budget,
            "; hint: loop over the long dimension with range() on smaller tiles, or use more warps"));
      }
    }
    for (const Block& region : op.regions) {
      absl::Status status = check_block(state, region, where);
      if (!status.ok()) return status;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status check_tile_registers(const LoweringState& state) {
  return check_block(state, state.program.body,
                     absl::StrCat("lowering \"", state.program.name, "\" for ", state.target.str()));
}

}  // namespace monotile::dsl::lower
