// Helpers shared by the simplification passes: operand substitution and side-effect facts.
#pragma once

#include <vector>

#include "dsl/ir.h"

namespace monotile::dsl {

// A ValueId -> ValueId replacement, applied to operands as a pass rewrites blocks in order (SSA
// guarantees a value's replacement is decided before any use of it is visited).
class Substitution {
 public:
  explicit Substitution(size_t num_values) : to_(num_values) {
    for (size_t i = 0; i < to_.size(); ++i) to_[i] = static_cast<ValueId>(i);
  }
  void replace(ValueId from, ValueId to) { to_.at(from) = resolve(to); }
  ValueId resolve(ValueId id) const {
    return id >= 0 && static_cast<size_t>(id) < to_.size() ? to_[id] : id;
  }
  void apply(Op& op) const {
    for (ValueId& operand : op.operands) operand = resolve(operand);
  }

 private:
  std::vector<ValueId> to_;
};

// Whether the op itself (not counting its regions) has an effect beyond its results: memory
// writes, atomics, ordering (fences, barriers, acquire loads, wait_until), asserts and prints.
bool has_side_effect(const Op& op);
// has_side_effect for the op or any op nested in its regions.
bool has_side_effect_deep(const Op& op);

}  // namespace monotile::dsl
