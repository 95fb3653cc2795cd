// DCE: one backward walk per block. A kept op marks its operands (and everything its regions use)
// live before earlier ops are visited, which SSA order makes sufficient.
#include "dsl/dce.h"

#include <algorithm>

#include "dsl/pass_utils.h"

namespace monotile::dsl {
namespace {

class Eliminator {
 public:
  explicit Eliminator(const Program& program) : program_(program), used_(program.value_types.size()) {}

  Program run() {
    block(program_.body);
    return std::move(program_);
  }

 private:
  bool live(const Op& op) const {
    if (op.code == OpCode::kYield || has_side_effect_deep(op)) return true;
    return std::any_of(op.results.begin(), op.results.end(), [&](ValueId id) { return used_.at(id); });
  }

  void block(Block& block) {
    std::vector<Op> kept;
    for (auto op = block.ops.rbegin(); op != block.ops.rend(); ++op) {
      if (!live(*op)) continue;
      for (Block& region : op->regions) this->block(region);
      for (ValueId operand : op->operands) used_.at(operand) = true;
      kept.push_back(std::move(*op));
    }
    std::reverse(kept.begin(), kept.end());
    block.ops = std::move(kept);
  }

  Program program_;
  std::vector<bool> used_;
};

}  // namespace

Program eliminate_dead_code(const Program& program) { return Eliminator(program).run(); }

}  // namespace monotile::dsl
