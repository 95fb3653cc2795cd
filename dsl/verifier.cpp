// Verifier: a scoped walk (values visible in their block and nested ones, in order) plus one rule
// per op code in op_rules.cpp. The first problem found is returned as InvalidArgument.
#include "dsl/verifier.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dsl/matrix_rules.h"
#include "dsl/op_rules.h"
#include "support/status_macros.h"

namespace monotile::dsl {
namespace {

absl::Status op_error(const Op& op, const std::string& what) {
  return absl::InvalidArgumentError(std::string(op_name(op.code)) + " at " + op.loc.str() + ": " + what);
}

class Verifier {
 public:
  explicit Verifier(const Program& program) : program_(program), state_(program.value_types.size()) {}

  absl::Status run() {
    if (program_.body.args.size() != program_.params.size()) {
      return absl::InvalidArgumentError("kernel " + program_.name + ": " +
                                        std::to_string(program_.params.size()) + " params but " +
                                        std::to_string(program_.body.args.size()) + " body args");
    }
    for (size_t i = 0; i < program_.params.size(); ++i) {
      const Param& param = program_.params[i];
      if (param.value != program_.body.args[i] || !valid(param.value) ||
          program_.type_of(param.value) != Type{param.type, {}}) {
        return absl::InvalidArgumentError("kernel " + program_.name + ": param \"" + param.name +
                                          "\" does not match body arg " + std::to_string(i));
      }
    }
    return block(program_.body, /*nested=*/false);
  }

 private:
  enum class State : uint8_t { kUndefined, kVisible, kOutOfScope };

  bool valid(ValueId id) const {
    return id >= 0 && static_cast<size_t>(id) < program_.value_types.size();
  }

  // Defines the values of one block (its args and results), checking each op, then hides them.
  absl::Status block(const Block& block, bool nested) {
    std::vector<ValueId> defined;
    absl::Status status = block_body(block, nested, &defined);
    for (ValueId id : defined) state_[id] = State::kOutOfScope;
    return status;
  }

  absl::Status define(ValueId id, const Op* op, std::vector<ValueId>* defined) {
    std::string where = op ? std::string(op_name(op->code)) + " at " + op->loc.str() : "kernel " + program_.name;
    if (!valid(id)) return absl::InvalidArgumentError(where + ": defines value %" + std::to_string(id) + " which has no type");
    if (state_[id] != State::kUndefined) {
      return absl::InvalidArgumentError(where + ": value %" + std::to_string(id) + " is defined twice (not SSA)");
    }
    state_[id] = State::kVisible;
    defined->push_back(id);
    return absl::OkStatus();
  }

  absl::Status block_body(const Block& block, bool nested, std::vector<ValueId>* defined) {
    for (ValueId arg : block.args) {
      if (nested) {
        MT_RETURN_IF_ERROR(define(arg, nullptr, defined));
      } else {
        state_.at(arg) = State::kVisible;
      }
    }
    for (size_t i = 0; i < block.ops.size(); ++i) {
      const Op& op = block.ops[i];
      bool last = i + 1 == block.ops.size();
      if (op.code == OpCode::kYield && !(nested && last)) {
        return op_error(op, "yield is only allowed as the last op of a nested region");
      }
      for (size_t j = 0; j < op.operands.size(); ++j) {
        ValueId id = op.operands[j];
        if (!valid(id) || state_[id] == State::kUndefined) {
          return op_error(op, "operand " + std::to_string(j) + " (%" + std::to_string(id) +
                                  ") is used before it is defined");
        }
        if (state_[id] == State::kOutOfScope) {
          return op_error(op, "operand " + std::to_string(j) + " (%" + std::to_string(id) +
                                  ") is defined in a region that does not enclose this op");
        }
      }
      for (const Block& region : op.regions) {
        absl::Status status = this->block(region, /*nested=*/true);
        if (!status.ok()) return status;
        if (region.ops.empty() || region.ops.back().code != OpCode::kYield) {
          return op_error(op, "a region does not end with yield");
        }
      }
      for (ValueId result : op.results) {
        if (!valid(result)) return op_error(op, "result %" + std::to_string(result) + " has no type");
      }
      std::string problem = check_op(program_, op);
      if (!problem.empty()) return op_error(op, problem);
      for (ValueId result : op.results) MT_RETURN_IF_ERROR(define(result, &op, defined));
    }
    if (nested && block.ops.empty()) return absl::InvalidArgumentError("a region has no yield");
    return absl::OkStatus();
  }

  const Program& program_;
  std::vector<State> state_;
};

}  // namespace

absl::Status verify(const Program& program) { return Verifier(program).run(); }

absl::Status verify_for_target(const Program& program, const Target& target) {
  absl::Status status = verify(program);
  if (!status.ok()) return status;
  absl::Status found = absl::OkStatus();
  auto visit = [&](const Block& block, auto&& self) -> void {
    for (const Op& op : block.ops) {
      if (!found.ok()) return;
      if (op.code == OpCode::kDot) {
        const Type& a = program.type_of(op.operands[0]);
        DotProblem problem = dot_problem(target, a.element.scalar, a.shape[1]);
        if (!problem.what.empty()) {
          found = op_error(op, problem.what + "; hint: " + problem.hint);
          return;
        }
      }
      for (const Block& region : op.regions) self(region, self);
    }
  };
  visit(program.body, visit);
  return found;
}

}  // namespace monotile::dsl
