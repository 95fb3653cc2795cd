// Barriers between same-buffer global accesses of different threads; see global_hazards.h.
#include "dsl/lower/global_hazards.h"

namespace monotile::dsl::lower {

namespace {

bool plain_access(const Op& op) {
  return (op.code == OpCode::kLoad || op.code == OpCode::kStore) && op.attrs.order == MemOrder::kPlain;
}

}  // namespace

GlobalHazards::GlobalHazards(const Program& program, const std::map<ValueId, const Op*>& producers)
    : producers_(&producers) {
  for (size_t i = 0; i < program.params.size(); ++i) {
    if (program.params[i].type.pointer) params_[program.params[i].value] = static_cast<int>(i);
  }
  Pending all;
  summarize(program.body, all);
  // Only a stored buffer can conflict; a store through a pointer of unknown origin may hit any.
  stored_ = all.stored;
  any_ = all.stored.count(kUnknown) > 0;
}

int GlobalHazards::buffer_of(ValueId pointer) const {
  for (int depth = 0; depth < 64; ++depth) {
    if (auto param = params_.find(pointer); param != params_.end()) return param->second;
    auto found = producers_->find(pointer);
    if (found == producers_->end()) return kUnknown;  // a loop-carried pointer
    const Op& op = *found->second;
    switch (op.code) {
      case OpCode::kAddPtr:
      case OpCode::kBroadcast:
      case OpCode::kExpandDims:
      case OpCode::kReshape:
      case OpCode::kTrans:
        pointer = op.operands.at(0);
        continue;
      case OpCode::kSelect: {
        int a = buffer_of(op.operands.at(1)), b = buffer_of(op.operands.at(2));
        return a == b ? a : kUnknown;
      }
      default:
        return kUnknown;
    }
  }
  return kUnknown;
}

bool GlobalHazards::conflicts(int buffer, const std::set<int>& with) {
  if (with.empty()) return false;
  return buffer == kUnknown || with.count(kUnknown) > 0 || with.count(buffer) > 0;
}

bool GlobalHazards::needs_barrier(const Op& op) const {
  if (!plain_access(op)) return false;
  int buffer = buffer_of(op.operands.at(0));
  if (!tracked(buffer)) return false;
  if (op.code == OpCode::kLoad) return conflicts(buffer, pending_.stored);
  return conflicts(buffer, pending_.stored) || conflicts(buffer, pending_.loaded);
}

void GlobalHazards::accessed(const Op& op) {
  if (!plain_access(op)) return;
  int buffer = buffer_of(op.operands.at(0));
  if (!tracked(buffer)) return;
  (op.code == OpCode::kLoad ? pending_.loaded : pending_.stored).insert(buffer);
}

void GlobalHazards::merge(const Pending& other) {
  pending_.loaded.insert(other.loaded.begin(), other.loaded.end());
  pending_.stored.insert(other.stored.begin(), other.stored.end());
}

void GlobalHazards::enter_loop(const Op& loop) {
  Pending body;
  for (const Block& region : loop.regions) summarize(region, body);
  for (int buffer : body.loaded) {
    if (tracked(buffer)) pending_.loaded.insert(buffer);
  }
  for (int buffer : body.stored) {
    if (tracked(buffer)) pending_.stored.insert(buffer);
  }
}

void GlobalHazards::summarize(const Block& block, Pending& into) const {
  for (const Op& op : block.ops) {
    if (plain_access(op)) {
      (op.code == OpCode::kLoad ? into.loaded : into.stored).insert(buffer_of(op.operands.at(0)));
    }
    for (const Block& region : op.regions) summarize(region, into);
  }
}

}  // namespace monotile::dsl::lower
