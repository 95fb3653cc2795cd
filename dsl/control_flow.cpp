// The non-template core of range / if_ / while_: operand checks, regions, yield type checks.
#include "dsl/control_flow.h"

#include <array>

#include "dsl/builder.h"
#include "dsl/error.h"
#include "dsl/promote.h"

namespace monotile::dsl::detail {
namespace {

SourceLoc at(const SourceLocation& loc) { return SourceLoc::from(loc); }

std::string types_str(const std::vector<Type>& types) {
  std::string text = "(";
  for (size_t i = 0; i < types.size(); ++i) {
    if (i > 0) text += ", ";
    text += types[i].str();
  }
  return text + ")";
}

std::vector<Type> types_of(Builder& builder, const std::vector<Value>& values, std::string_view op,
                           const SourceLocation& loc) {
  std::vector<Type> types;
  for (const Value& value : values) types.push_back(builder.type_of(value, op, loc));
  return types;
}

// Carried initial values: literals become scalars of their own dtype (i32 / f32 / i1).
std::vector<Value> carried_values(Builder& builder, const std::vector<Operand>& init,
                                  std::string_view op, const SourceLocation& loc) {
  std::vector<Value> values;
  for (const Operand& operand : init) {
    if (operand.is_value()) {
      builder.type_of(operand.value(), op, loc);
      values.push_back(operand.value());
    } else {
      values.push_back(materialize(builder, operand, literal_dtype(operand), {}, op, loc));
    }
  }
  return values;
}

void check_yield(Builder& builder, const std::vector<Value>& yielded,
                 const std::vector<Type>& expected, std::string_view op, std::string_view what,
                 const SourceLocation& loc) {
  std::vector<Type> got = types_of(builder, yielded, op, loc);
  if (got == expected) return;
  throw Error(at(loc), std::string(op),
              std::string(what) + " returns " + types_str(got) + " but the loop carries " +
                  types_str(expected),
              types_str(expected), types_str(got),
              "return one value per carried value, each of its carried type (convert with "
              "x.to(dtype), broadcast with broadcast_to)");
}

}  // namespace

std::vector<Value> build_for(const Operand& lo, const Operand& hi, const Operand& step,
                             const std::vector<Operand>& init, const LoopBody& body,
                             const SourceLocation& loc) {
  Builder& builder = Builder::current("range", loc);
  std::array<Operand, 3> bounds{lo, hi, step};
  ElementType index = common_dtype(builder, bounds, "range", loc);
  if (index.scalar == ScalarType::kI1) index = ElementType{ScalarType::kI32};
  for (const Operand& bound : bounds) {
    bool scalar = !bound.is_value() || builder.type_of(bound.value(), "range", loc).is_scalar();
    if (!is_integer(index.scalar) || !scalar || bound.kind() == Operand::Kind::kFloat) {
      throw Error(at(loc), "range", "loop bounds must be integer scalars",
                  "integer scalars or literals", "a " + dtype_str(index) + (scalar ? " scalar" : " tile"),
                  "loop over an integer range; compute float values from the index");
    }
  }
  if (!step.is_value() && step.int_literal() <= 0) {
    throw Error(at(loc), "range", "step " + std::to_string(step.int_literal()) + " is not positive",
                "a step > 0", std::to_string(step.int_literal()),
                "count up from lo to hi; reverse the index inside the body (hi - 1 - i)");
  }
  std::vector<Value> operands;
  for (const Operand& bound : bounds) {
    operands.push_back(materialize(builder, bound, index, {}, "range", loc));
  }
  std::vector<Value> carried = carried_values(builder, init, "range", loc);
  std::vector<Type> carried_types = types_of(builder, carried, "range", loc);
  operands.insert(operands.end(), carried.begin(), carried.end());
  std::vector<Type> arg_types{Type{index, {}}};
  arg_types.insert(arg_types.end(), carried_types.begin(), carried_types.end());
  Block block = builder.region(
      "range", arg_types,
      [&](const std::vector<Value>& args) {
        return body(args[0], std::vector<Value>(args.begin() + 1, args.end()));
      },
      [&](const std::vector<Value>& yielded) {
        check_yield(builder, yielded, carried_types, "range", "the loop body", loc);
      },
      loc);
  std::vector<Block> regions;
  regions.push_back(std::move(block));
  return builder.emit(OpCode::kFor, operands, {}, carried_types, loc, std::move(regions));
}

std::vector<Value> build_if(const Value& cond, const BranchBody& then_body,
                            const BranchBody* else_body, const SourceLocation& loc) {
  Builder& builder = Builder::current("if_", loc);
  Type cond_type = builder.type_of(cond, "if_", loc);
  if (cond_type != Type{ElementType{ScalarType::kI1}, {}}) {
    throw Error(at(loc), "if_", "the condition is " + cond_type.str() + ", not an i1 scalar",
                "i1", cond_type.str(),
                cond_type.is_scalar() ? "compare to get a condition, e.g. if_(n > 0, ...)"
                                      : "branch on a scalar; for tiles use where(cond, a, b)");
  }
  std::vector<Type> then_types;
  Block then_block = builder.region(
      "if_", {}, [&](const std::vector<Value>&) { return then_body(); },
      [&](const std::vector<Value>& yielded) {
        then_types = types_of(builder, yielded, "if_", loc);
        if (!else_body && !yielded.empty()) {
          throw Error(at(loc), "if_", "if_ without an else branch returns values",
                      "no values", types_str(then_types),
                      "add an else branch returning the same types: if_(c, then, else)");
        }
      },
      loc);
  Block else_block = builder.region(
      "if_", {},
      [&](const std::vector<Value>&) { return else_body ? (*else_body)() : std::vector<Value>{}; },
      [&](const std::vector<Value>& yielded) {
        std::vector<Type> got = types_of(builder, yielded, "if_", loc);
        if (got != then_types) {
          throw Error(at(loc), "if_",
                      "the branches return different types: then " + types_str(then_types) +
                          ", else " + types_str(got),
                      types_str(then_types), types_str(got),
                      "return the same number of values with the same types from both branches");
        }
      },
      loc);
  std::vector<Block> regions;
  regions.push_back(std::move(then_block));
  regions.push_back(std::move(else_block));
  return builder.emit(OpCode::kIf, {cond}, {}, then_types, loc, std::move(regions));
}

std::vector<Value> build_while(const std::vector<Operand>& init, const CarriedBody& cond,
                               const CarriedBody& body, const SourceLocation& loc) {
  Builder& builder = Builder::current("while_", loc);
  std::vector<Value> carried = carried_values(builder, init, "while_", loc);
  std::vector<Type> carried_types = types_of(builder, carried, "while_", loc);
  Block cond_block = builder.region(
      "while_", carried_types, cond,
      [&](const std::vector<Value>& yielded) {
        std::vector<Type> got = types_of(builder, yielded, "while_", loc);
        std::vector<Type> want{Type{ElementType{ScalarType::kI1}, {}}};
        if (got != want) {
          throw Error(at(loc), "while_", "the condition returns " + types_str(got) + ", not (i1)",
                      "(i1)", types_str(got), "return one i1 scalar, e.g. i < n");
        }
      },
      loc);
  Block body_block = builder.region(
      "while_", carried_types, body,
      [&](const std::vector<Value>& yielded) {
        check_yield(builder, yielded, carried_types, "while_", "the loop body", loc);
      },
      loc);
  std::vector<Block> regions;
  regions.push_back(std::move(cond_block));
  regions.push_back(std::move(body_block));
  return builder.emit(OpCode::kWhile, carried, {}, carried_types, loc, std::move(regions));
}

}  // namespace monotile::dsl::detail
