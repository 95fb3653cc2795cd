// Side-effect classification for DCE and CSE.
#include "dsl/pass_utils.h"

namespace monotile::dsl {

bool has_side_effect(const Op& op) {
  switch (op.code) {
    case OpCode::kStore:
    case OpCode::kPrefetch:  // a hint the program asked for: kept where written, never merged
    case OpCode::kAtomicRmw:
    case OpCode::kAtomicCas:
    case OpCode::kFence:
    case OpCode::kBarrier:
    case OpCode::kWaitUntil:
    case OpCode::kLaunchDependents:
    case OpCode::kWaitGridDependency:
    case OpCode::kAssert:
    case OpCode::kPrint: return true;
    case OpCode::kLoad: return op.attrs.order != MemOrder::kPlain;
    default: return false;
  }
}

bool has_side_effect_deep(const Op& op) {
  if (has_side_effect(op)) return true;
  for (const Block& region : op.regions) {
    for (const Op& inner : region.ops) {
      if (has_side_effect_deep(inner)) return true;
    }
  }
  return false;
}

}  // namespace monotile::dsl
