// Test-only: assembles IR by hand (no builder), so interpreter tests can state exact ops and source
// lines. Each call appends one op to the current block and returns its result.
#pragma once

#include <string>
#include <vector>

#include "dsl/ir.h"

namespace monotile::dsl::interp::testing {

class HandProgram {
 public:
  explicit HandProgram(std::string name) { program_.name = std::move(name); }

  ValueId param(const std::string& name, ElementType type) {
    const ValueId value = program_.add_value(Type{type, {}});
    program_.params.push_back(Param{name, type, value, 1});
    program_.body.args.push_back(value);
    return value;
  }
  // Appends `code` with `operands` and results of `types`; returns the first result.
  ValueId op(OpCode code, std::vector<ValueId> operands, std::vector<Type> types, Attrs attrs = {}, int line = 0) {
    Op op;
    op.code = code;
    op.operands = std::move(operands);
    for (Type& type : types) op.results.push_back(program_.add_value(std::move(type)));
    op.attrs = std::move(attrs);
    op.loc = SourceLoc{"hand_kernel.cpp", line, 1, "kernel"};
    current().ops.push_back(std::move(op));
    const Op& added = current().ops.back();
    last_results_ = added.results;
    return added.results.empty() ? kNoValue : added.results[0];
  }
  const std::vector<ValueId>& last_results() const { return last_results_; }
  ValueId constant_int(ScalarType type, int64_t value, std::vector<int64_t> shape = {}) {
    Attrs attrs;
    attrs.int_value = value;
    return op(OpCode::kConstant, {}, {Type{{type, false}, std::move(shape)}}, attrs);
  }
  ValueId constant_float(ScalarType type, double value, std::vector<int64_t> shape = {}) {
    Attrs attrs;
    attrs.float_value = value;
    return op(OpCode::kConstant, {}, {Type{{type, false}, std::move(shape)}}, attrs);
  }

  // Regions: the op most recently added gets a new region; ops go there until end_region().
  std::vector<ValueId> begin_region(std::vector<Type> arg_types) {
    Op& owner = current().ops.back();
    owner.regions.emplace_back();
    Block& block = owner.regions.back();
    for (Type& type : arg_types) block.args.push_back(program_.add_value(std::move(type)));
    path_.push_back({current_index(), owner.regions.size() - 1});
    return block.args;
  }
  void end_region(std::vector<ValueId> yielded) {
    op(OpCode::kYield, std::move(yielded), {});
    path_.pop_back();
  }

  const Type& type(ValueId value) const { return program_.type_of(value); }
  Program finish() { return program_; }

 private:
  struct Step {
    size_t op;
    size_t region;
  };
  size_t current_index() { return current().ops.size() - 1; }
  Block& current() {
    Block* block = &program_.body;
    for (const Step& step : path_) block = &block->ops[step.op].regions[step.region];
    return *block;
  }
  Program program_;
  std::vector<Step> path_;
  std::vector<ValueId> last_results_;
};

}  // namespace monotile::dsl::interp::testing
