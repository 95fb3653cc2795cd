// CSE with a scoped table: entries made inside a region are dropped when it closes, so a value is
// only reused where it dominates.
#include "dsl/cse.h"

#include <bit>
#include <string>
#include <unordered_map>

#include "absl/strings/str_cat.h"
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

// Everything that makes two ops compute the same thing. Built with StrAppend: GCC 12 at -O3 warns
// falsely (-Wrestrict, its bug 105651) on `"literal" + std::string`.
std::string key(const Program& program, const Op& op) {
  const Attrs& a = op.attrs;
  std::string text = absl::StrCat(static_cast<int>(op.code), "(");
  for (ValueId operand : op.operands) absl::StrAppend(&text, operand, ",");
  absl::StrAppend(&text, ")", a.axis, "|");
  for (int64_t value : a.ints) absl::StrAppend(&text, value, ",");
  absl::StrAppend(&text, "|", a.int_value, "|", std::bit_cast<uint64_t>(a.float_value), "|", a.k, "|",
                  int{a.descending}, int{a.reverse}, int{a.has_mask}, int{a.has_other}, "|");
  absl::StrAppend(&text, static_cast<int>(a.cmp), static_cast<int>(a.reduce), static_cast<int>(a.atomic),
                  static_cast<int>(a.scope), static_cast<int>(a.order), static_cast<int>(a.cache),
                  static_cast<int>(a.evict), a.l2_fetch, ",", a.stages, "|", a.text, "|");
  for (ValueId result : op.results) absl::StrAppend(&text, program.type_of(result).str(), ";");
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
