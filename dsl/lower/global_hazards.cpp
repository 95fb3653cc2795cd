// Barriers between same-buffer global accesses of different threads; see global_hazards.h.
#include "dsl/lower/global_hazards.h"

namespace monotile::dsl::lower {

namespace {

bool plain_access(const Op& op) {
  return (op.code == OpCode::kLoad || op.code == OpCode::kStore) &&
         op.attrs.order == MemOrder::kPlain;
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

bool GlobalHazards::same_pointers(ValueId a, ValueId b, int depth) const {
  if (a == b) return true;
  if (depth > 16) return false;
  auto pa = producers_->find(a), pb = producers_->find(b);
  if (pa == producers_->end() || pb == producers_->end()) return false;
  const Op &x = *pa->second, &y = *pb->second;
  if (x.code != y.code || x.operands.size() != y.operands.size() || x.results.size() != 1)
    return false;
  switch (x.code) {
    case OpCode::kAddPtr:
    case OpCode::kAdd:
    case OpCode::kMul:
    case OpCode::kBroadcast:
    case OpCode::kExpandDims:
    case OpCode::kCast:
      break;
    case OpCode::kConstant:
      return x.attrs.int_value == y.attrs.int_value && x.attrs.float_value == y.attrs.float_value;
    case OpCode::kArange:
      return x.attrs.ints == y.attrs.ints;
    default:
      return false;
  }
  if (x.attrs.axis != y.attrs.axis) return false;
  for (size_t i = 0; i < x.operands.size(); ++i) {
    if (!same_pointers(x.operands[i], y.operands[i], depth + 1)) return false;
  }
  return true;
}

bool GlobalHazards::needs_barrier(const Op& op) const {
  if (!plain_access(op)) return false;
  const ValueId pointer = op.operands.at(0);
  int buffer = buffer_of(pointer);
  if (!tracked(buffer)) return false;
  if (op.code == OpCode::kLoad) return conflicts(buffer, pending_.stored);
  if (conflicts(buffer, pending_.loaded)) return true;
  for (ValueId stored : pending_.stores) {
    int other = buffer_of(stored);
    if (buffer == kUnknown || other == kUnknown ||
        (other == buffer && same_pointers(stored, pointer)))
      return true;
  }
  return false;
}

void GlobalHazards::accessed(const Op& op) {
  if (!plain_access(op)) return;
  int buffer = buffer_of(op.operands.at(0));
  if (!tracked(buffer)) return;
  (op.code == OpCode::kLoad ? pending_.loaded : pending_.stored).insert(buffer);
  if (op.code == OpCode::kStore) pending_.stores.insert(op.operands.at(0));
}

void GlobalHazards::merge(const Pending& other) {
  pending_.loaded.insert(other.loaded.begin(), other.loaded.end());
  pending_.stored.insert(other.stored.begin(), other.stored.end());
  pending_.stores.insert(other.stores.begin(), other.stores.end());
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
  pending_.stores.insert(body.stores.begin(), body.stores.end());
}

void GlobalHazards::summarize(const Block& block, Pending& into) const {
  for (const Op& op : block.ops) {
    if (plain_access(op)) {
      (op.code == OpCode::kLoad ? into.loaded : into.stored).insert(buffer_of(op.operands.at(0)));
      if (op.code == OpCode::kStore) into.stores.insert(op.operands.at(0));
    }
    for (const Block& region : op.regions) summarize(region, into);
  }
}

}  // namespace monotile::dsl::lower
