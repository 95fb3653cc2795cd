// CSE with a scoped table: entries made inside a region are dropped when it closes, so a value is
// only reused where it dominates.
#include "dsl/cse.h"

#include <bit>
#include <string>
#include <unordered_map>

#include "dsl/pass_utils.h"

namespace monotile::dsl {
namespace {

bool mergeable(const Op& op) {
  if (!op.regions.empty() || op.results.empty() || has_side_effect(op)) return false;
  switch (op.code) {
    case OpCode::kLoad:  // memory may change between two loads
    case OpCode::kGlobalTimer:
    case OpCode::kYield: return false;
    default: return true;
  }
}

// Everything that makes two ops compute the same thing.
std::string key(const Program& program, const Op& op) {
  const Attrs& a = op.attrs;
  std::string text = std::to_string(static_cast<int>(op.code)) + "(";
  for (ValueId operand : op.operands) text += std::to_string(operand) + ",";
  text += ")" + std::to_string(a.axis) + "|";
  for (int64_t value : a.ints) text += std::to_string(value) + ",";
  text += "|" + std::to_string(a.int_value) + "|" + std::to_string(std::bit_cast<uint64_t>(a.float_value)) +
          "|" + std::to_string(a.k) + "|" + std::to_string(a.descending) + std::to_string(a.reverse) +
          std::to_string(a.has_mask) + std::to_string(a.has_other) + "|" +
          std::to_string(static_cast<int>(a.cmp)) + std::to_string(static_cast<int>(a.reduce)) +
          std::to_string(static_cast<int>(a.atomic)) + std::to_string(static_cast<int>(a.scope)) +
          std::to_string(static_cast<int>(a.order)) + std::to_string(static_cast<int>(a.cache)) +
          std::to_string(static_cast<int>(a.evict)) + "|" + a.text + "|";
  for (ValueId result : op.results) text += program.type_of(result).str() + ";";
  return text;
}

class Eliminator {
 public:
  explicit Eliminator(const Program& program)
      : program_(program), substitution_(program.value_types.size()) {}

  Program run() {
    block(program_.body);
    return std::move(program_);
  }

 private:
  void block(Block& block) {
    scopes_.emplace_back();
    std::vector<Op> kept;
    for (Op& op : block.ops) {
      substitution_.apply(op);
      for (Block& region : op.regions) this->block(region);
      if (mergeable(op)) {
        std::string k = key(program_, op);
        if (const std::vector<ValueId>* earlier = find(k)) {
          for (size_t i = 0; i < op.results.size(); ++i) substitution_.replace(op.results[i], (*earlier)[i]);
          continue;
        }
        scopes_.back().emplace(std::move(k), op.results);
      }
      kept.push_back(std::move(op));
    }
    block.ops = std::move(kept);
    scopes_.pop_back();
  }

  const std::vector<ValueId>* find(const std::string& k) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      auto it = scope->find(k);
      if (it != scope->end()) return &it->second;
    }
    return nullptr;
  }

  Program program_;
  Substitution substitution_;
  std::vector<std::unordered_map<std::string, std::vector<ValueId>>> scopes_;
};

}  // namespace

Program eliminate_common_subexpressions(const Program& program) { return Eliminator(program).run(); }

}  // namespace monotile::dsl
