// Constant folding over splat constants. Integer constants are kept wrapped to their dtype (the
// builder's invariant), so signed and unsigned values both compare correctly as int64.
#include "dsl/fold_constants.h"

#include <bit>
#include <cmath>
#include <optional>

#include "dsl/pass_utils.h"
#include "dsl/scalar_semantics.h"
#include "dsl/scalar_values.h"

namespace monotile::dsl {
namespace {

struct Constant {
  int64_t integer = 0;
  double real = 0;
};

// Arithmetic in the op's compute type: f64 for f64, f32 for f32/f16/bf16 (ir.h), then one rounding.
template <typename T>
std::optional<T> compute(OpCode code, const std::vector<T>& x) {
  switch (code) {
    case OpCode::kAdd: return x[0] + x[1];
    case OpCode::kSub: return x[0] - x[1];
    case OpCode::kMul: return x[0] * x[1];
    case OpCode::kDiv: return x[0] / x[1];
    case OpCode::kRem: return std::fmod(x[0], x[1]);
    case OpCode::kMin:
    case OpCode::kMax:
      // Two zeros: a target's fmin/fmax may return either sign, so the choice is left to it.
      if (x[0] == 0 && x[1] == 0) return std::nullopt;
      return static_cast<T>(code == OpCode::kMin ? float_min(x[0], x[1]) : float_max(x[0], x[1]));
    case OpCode::kNeg: return -x[0];
    case OpCode::kAbs: return std::fabs(x[0]);
    case OpCode::kFma: return std::fma(x[0], x[1], x[2]);
    default: return std::nullopt;
  }
}

std::optional<double> fold_float(OpCode code, ScalarType type, const std::vector<double>& x) {
  if (type == ScalarType::kF64) return compute<double>(code, x);
  std::vector<float> narrow(x.begin(), x.end());  // exact: the values are f32/f16/bf16 already
  std::optional<float> result = compute<float>(code, narrow);
  if (!result) return std::nullopt;
  return round_to_dtype(type, static_cast<double>(*result));
}

std::optional<int64_t> fold_integer(OpCode code, ScalarType type, std::vector<int64_t> x) {
  auto wrap = [&](uint64_t value) { return wrap_to_dtype(type, static_cast<int64_t>(value)); };
  int bits = scalar_type_bits(type);
  uint64_t a = static_cast<uint64_t>(x[0]), b = x.size() > 1 ? static_cast<uint64_t>(x[1]) : 0;
  switch (code) {
    case OpCode::kAdd: return wrap(a + b);
    case OpCode::kSub: return wrap(a - b);
    case OpCode::kMul: return wrap(a * b);
    case OpCode::kDiv:
    case OpCode::kRem:
      if (x[1] == 0 || (is_signed(type) && x[1] == -1)) return std::nullopt;  // undefined / overflow
      return wrap(static_cast<uint64_t>(code == OpCode::kDiv ? x[0] / x[1] : x[0] % x[1]));
    case OpCode::kMin: return std::min(x[0], x[1]);
    case OpCode::kMax: return std::max(x[0], x[1]);
    case OpCode::kAnd: return wrap(a & b);
    case OpCode::kOr: return wrap(a | b);
    case OpCode::kXor: return wrap(a ^ b);
    case OpCode::kShl:
      if (x[1] < 0 || x[1] >= bits) return std::nullopt;
      return wrap(a << x[1]);
    case OpCode::kShr:
      if (x[1] < 0 || x[1] >= bits) return std::nullopt;
      return is_signed(type) ? wrap(static_cast<uint64_t>(x[0] >> x[1])) : wrap(a >> x[1]);
    case OpCode::kUmulhi:
      if (bits == 32) {
        uint64_t product = (a & 0xffffffffu) * (b & 0xffffffffu);
        return wrap(product >> 32);
      }
      return wrap(static_cast<uint64_t>((static_cast<unsigned __int128>(a) * b) >> 64));
    case OpCode::kNeg: return wrap(0 - a);
    case OpCode::kAbs: return wrap(x[0] < 0 ? 0 - a : a);
    case OpCode::kNot: return wrap(~a);
    default: return std::nullopt;
  }
}

class Folder {
 public:
  explicit Folder(const Program& program)
      : program_(program), substitution_(program.value_types.size()),
        constants_(program.value_types.size()) {}

  Program run() {
    block(program_.body);
    return std::move(program_);
  }

 private:
  const Type& type(ValueId id) const { return program_.type_of(id); }
  bool floating(ValueId id) const { return is_float(type(id).element.scalar); }
  const std::optional<Constant>& constant(ValueId id) const { return constants_.at(id); }
  bool constant_is(ValueId id, int64_t value) const {
    const auto& c = constant(id);
    if (!c) return false;
    return floating(id) ? c->real == static_cast<double>(value) : c->integer == value;
  }

  void block(Block& block) {
    std::vector<Op> kept;
    for (Op& op : block.ops) {
      substitution_.apply(op);
      for (Block& region : op.regions) this->block(region);
      if (op.code == OpCode::kIf && constant(op.operands[0])) {
        inline_branch(op, constant(op.operands[0])->integer != 0 ? 0 : 1, kept);
        continue;
      }
      if (std::optional<ValueId> same = identity(op)) {
        substitution_.replace(op.results[0], *same);
        continue;
      }
      if (std::optional<Constant> value = evaluate(op)) {
        op.code = OpCode::kConstant;
        op.operands.clear();
        op.regions.clear();
        op.attrs = Attrs{};
        op.attrs.int_value = value->integer;
        op.attrs.float_value = value->real;
      }
      if (op.code == OpCode::kConstant) {
        constants_[op.results[0]] = Constant{op.attrs.int_value, op.attrs.float_value};
      }
      kept.push_back(std::move(op));
    }
    block.ops = std::move(kept);
  }

  // Replaces an if on a constant condition by the taken branch's ops; its results become the
  // values the branch yields. The branch's values dominate everything after the if, so SSA holds.
  void inline_branch(Op& op, size_t taken, std::vector<Op>& kept) {
    Block& branch = op.regions[taken];
    const Op& yield = branch.ops.back();
    for (size_t i = 0; i < op.results.size(); ++i) {
      substitution_.replace(op.results[i], substitution_.resolve(yield.operands[i]));
    }
    for (size_t i = 0; i + 1 < branch.ops.size(); ++i) kept.push_back(std::move(branch.ops[i]));
  }

  // An operand the op's result always equals, if any.
  std::optional<ValueId> identity(const Op& op) const {
    if (op.results.size() != 1 || op.operands.empty()) return std::nullopt;
    ValueId result = op.results[0];
    auto same_type = [&](ValueId id) -> std::optional<ValueId> {
      if (type(id) == type(result)) return id;
      return std::nullopt;
    };
    const std::vector<ValueId>& in = op.operands;
    bool integer = !floating(result) && !type(result).element.pointer;
    switch (op.code) {
      case OpCode::kAdd:
        if (integer && constant_is(in[1], 0)) return same_type(in[0]);
        if (integer && constant_is(in[0], 0)) return same_type(in[1]);
        return std::nullopt;
      case OpCode::kSub:
        if (integer && constant_is(in[1], 0)) return same_type(in[0]);
        return std::nullopt;
      case OpCode::kMul:
        if (constant_is(in[1], 1)) return same_type(in[0]);
        if (constant_is(in[0], 1)) return same_type(in[1]);
        return std::nullopt;
      case OpCode::kDiv:
        if (constant_is(in[1], 1)) return same_type(in[0]);
        return std::nullopt;
      case OpCode::kSelect:
        if (constant(in[0])) return same_type(constant(in[0])->integer != 0 ? in[1] : in[2]);
        if (in[1] == in[2]) return same_type(in[1]);
        return std::nullopt;
      case OpCode::kAddPtr:
        if (constant_is(in[1], 0)) return same_type(in[0]);
        return std::nullopt;
      case OpCode::kBroadcast:
      case OpCode::kReshape:
      case OpCode::kCast:
        return same_type(in[0]);
      default: return std::nullopt;
    }
  }

  std::optional<Constant> evaluate(const Op& op) const {
    if (op.results.size() != 1 || op.operands.empty() || !op.regions.empty()) return std::nullopt;
    for (ValueId operand : op.operands) {
      if (!constant(operand)) return std::nullopt;
    }
    const Constant& first = *constant(op.operands[0]);
    ElementType to = type(op.results[0]).element;
    switch (op.code) {
      case OpCode::kBroadcast:
      case OpCode::kExpandDims:
      case OpCode::kReshape:
      case OpCode::kTrans: return first;
      case OpCode::kJoin:
      case OpCode::kCat: {
        const Constant& second = *constant(op.operands[1]);
        bool equal = floating(op.results[0]) ? std::bit_cast<uint64_t>(first.real) == std::bit_cast<uint64_t>(second.real)
                                             : first.integer == second.integer;
        return equal ? std::optional<Constant>(first) : std::nullopt;
      }
      case OpCode::kCast: return cast(op.operands[0], to.scalar);
      case OpCode::kSelect:
        return *constant(first.integer != 0 ? op.operands[1] : op.operands[2]);
      case OpCode::kCmp: {
        const Constant& second = *constant(op.operands[1]);
        bool result = floating(op.operands[0]) ? compare(op.attrs.cmp, first.real, second.real)
                                               : compare(op.attrs.cmp, first.integer, second.integer);
        return Constant{result ? 1 : 0, 0};
      }
      default: break;
    }
    if (to.pointer || to.scalar == ScalarType::kMxfp4) return std::nullopt;
    if (is_float(to.scalar)) {
      std::vector<double> values;
      for (ValueId operand : op.operands) values.push_back(constant(operand)->real);
      std::optional<double> folded = fold_float(op.code, to.scalar, values);
      if (!folded) return std::nullopt;
      return Constant{0, *folded};
    }
    std::vector<int64_t> values;
    for (ValueId operand : op.operands) values.push_back(constant(operand)->integer);
    std::optional<int64_t> folded = fold_integer(op.code, to.scalar, values);
    if (!folded) return std::nullopt;
    return Constant{*folded, 0};
  }

  std::optional<Constant> cast(ValueId from, ScalarType to) const {
    const Constant& value = *constant(from);
    ScalarType source = type(from).element.scalar;
    if (source == ScalarType::kMxfp4 || to == ScalarType::kMxfp4) return std::nullopt;
    bool from_float = is_float(source), to_float = is_float(to);
    if (from_float && to_float) return Constant{0, round_to_dtype(to, value.real)};
    if (to == ScalarType::kI1) return Constant{(from_float ? value.real != 0 : value.integer != 0) ? 1 : 0, 0};
    if (to_float) return Constant{0, round_to_dtype(to, static_cast<double>(value.integer))};
    if (from_float) {
      // Truncation toward zero; out of range (and NaN) is undefined, so it is not folded.
      double truncated = std::trunc(value.real);
      if (!std::isfinite(truncated) || std::fabs(truncated) >= 9.2e18) return std::nullopt;
      int64_t integer = static_cast<int64_t>(truncated);
      if (wrap_to_dtype(to, integer) != integer) return std::nullopt;
      return Constant{integer, 0};
    }
    return Constant{wrap_to_dtype(to, value.integer), 0};
  }

  Program program_;
  Substitution substitution_;
  std::vector<std::optional<Constant>> constants_;
};

}  // namespace

Program fold_constants(const Program& program) { return Folder(program).run(); }

}  // namespace monotile::dsl
