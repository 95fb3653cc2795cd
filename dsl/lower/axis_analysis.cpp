// Axis analysis: Triton's AxisInfo rules (contiguity, divisibility, constancy) plus integer ranges,
// applied op by op. Unknown ops get the conservative default (1, 1, 1, no range).
#include "dsl/lower/axis_analysis.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/check.h"

namespace monotile::dsl::lower {
namespace {

using Range = std::pair<int64_t, int64_t>;
constexpr int64_t kRangeLimit = int64_t{1} << 62;

int64_t div_of(int64_t value) {
  if (value == 0) return kMaxDivisibility;
  return std::min(kMaxDivisibility, pow2_part(value < 0 ? -value : value));
}

AxisInfo unknown(int rank) {
  size_t n = std::max(rank, 1);
  return AxisInfo{std::vector<int64_t>(n, 1), std::vector<int64_t>(n, 1), std::vector<int64_t>(n, 1),
                  std::nullopt};
}

AxisInfo constant(const Type& type, int64_t value, bool integer) {
  AxisInfo info = unknown(static_cast<int>(type.shape.size()));
  for (size_t d = 0; d < type.shape.size(); ++d) info.constancy[d] = pow2_part(type.shape[d]);
  if (integer) {
    std::fill(info.divisibility.begin(), info.divisibility.end(), div_of(value));
    info.range = Range{value, value};
  }
  return info;
}

std::optional<Range> checked(__int128 lo, __int128 hi) {
  if (lo < -kRangeLimit || hi > kRangeLimit) return std::nullopt;
  return Range{static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
}

std::optional<Range> range_op(OpCode code, const std::optional<Range>& a, const std::optional<Range>& b) {
  if (!a || !b) return std::nullopt;
  switch (code) {
    case OpCode::kAdd: return checked(__int128{a->first} + b->first, __int128{a->second} + b->second);
    case OpCode::kSub: return checked(__int128{a->first} - b->second, __int128{a->second} - b->first);
    case OpCode::kMul: {
      __int128 c[] = {__int128{a->first} * b->first, __int128{a->first} * b->second,
                      __int128{a->second} * b->first, __int128{a->second} * b->second};
      return checked(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
    }
    case OpCode::kMin: return Range{std::min(a->first, b->first), std::min(a->second, b->second)};
    case OpCode::kMax: return Range{std::max(a->first, b->first), std::max(a->second, b->second)};
    default: return std::nullopt;
  }
}

// The range of a comparison's i1 result when the operand ranges decide it.
std::optional<Range> compare(CmpPredicate cmp, const std::optional<Range>& a, const std::optional<Range>& b) {
  if (!a || !b) return std::nullopt;
  auto decided = [](bool always, bool never) -> std::optional<Range> {
    if (always) return Range{1, 1};
    if (never) return Range{0, 0};
    return Range{0, 1};
  };
  switch (cmp) {
    case CmpPredicate::kLt: return decided(a->second < b->first, a->first >= b->second);
    case CmpPredicate::kLe: return decided(a->second <= b->first, a->first > b->second);
    case CmpPredicate::kGt: return decided(a->first > b->second, a->second <= b->first);
    case CmpPredicate::kGe: return decided(a->first >= b->second, a->second < b->first);
    case CmpPredicate::kEq:
      return decided(a->first == a->second && b->first == b->second && a->first == b->first,
                     a->second < b->first || b->second < a->first);
    case CmpPredicate::kNe:
      return decided(a->second < b->first || b->second < a->first,
                     a->first == a->second && b->first == b->second && a->first == b->first);
  }
  return std::nullopt;
}

class Analysis {
 public:
  explicit Analysis(LoweringState& state) : state_(state) {
    state_.axis.assign(state_.program.value_types.size(), AxisInfo{});
  }

  void run() {
    params();
    for (const Op& op : state_.program.body.ops) this->op(op);
  }

 private:
  const Type& type(ValueId v) const { return state_.program.type_of(v); }
  int rank(ValueId v) const { return static_cast<int>(type(v).shape.size()); }
  const AxisInfo& get(ValueId v) const { return state_.axis.at(v); }
  void set(ValueId v, AxisInfo info) { state_.axis.at(v) = std::move(info); }
  bool is_int(ValueId v) const { return !type(v).element.pointer && is_integer(type(v).element.scalar); }

  void block(const Block& block) {
    for (ValueId arg : block.args) set(arg, unknown(rank(arg)));
    for (const Op& op : block.ops) this->op(op);
  }

  // Parameters: pointers are assumed aligned (LowerOptions::pointer_alignment), integers only
  // what their declaration promises (Builder::arg's multiple_of).
  void params() {
    for (const Param& param : state_.program.params) {
      AxisInfo info = unknown(0);
      if (param.type.pointer) info.divisibility[0] = state_.options.pointer_alignment;
      else info.divisibility[0] = std::min(kMaxDivisibility, param.multiple_of);
      set(param.value, info);
    }
  }

  // A range outside the result type's values means the op may wrap: drop it.
  void check_range(ValueId v) {
    AxisInfo& info = state_.axis.at(v);
    if (!info.range || !is_int(v)) return;
    int bits = scalar_type_bits(type(v).element.scalar);
    if (bits >= 64) return;
    int64_t low = is_signed(type(v).element.scalar) ? -(int64_t{1} << (bits - 1)) : 0;
    int64_t high = is_signed(type(v).element.scalar) ? (int64_t{1} << (bits - 1)) - 1 : (int64_t{1} << bits) - 1;
    if (bits == 1) low = 0, high = 1;
    if (info.range->first < low || info.range->second > high) info.range.reset();
  }

  void op(const Op& op) {
    visit(op);
    for (ValueId result : op.results) check_range(result);
  }

  void visit(const Op& op) {
    if (op.code == OpCode::kFor) {
      // The induction variable is lo + i * step: a multiple of gcd(lo, step).
      const Block& body = op.regions.at(0);
      for (ValueId arg : body.args) set(arg, unknown(rank(arg)));
      set(body.args.at(0), induction(op));
      for (const Op& inner : body.ops) this->op(inner);
      for (ValueId result : op.results) set(result, unknown(rank(result)));
      return;
    }
    for (const Block& region : op.regions) block(region);
    if (op.results.empty()) return;
    ValueId out = op.results[0];
    const Type& out_type = type(out);
    int r = rank(out);
    switch (op.code) {
      case OpCode::kConstant:
        set(out, constant(out_type, op.attrs.int_value, is_int(out)));
        return;
      case OpCode::kArange: {
        AxisInfo info = unknown(1);
        info.contiguity[0] = pow2_part(out_type.shape[0]);
        info.divisibility[0] = div_of(op.attrs.ints.at(0));
        info.range = Range{op.attrs.ints.at(0), op.attrs.ints.at(1) - 1};
        set(out, info);
        return;
      }
      case OpCode::kProgramId: {
        AxisInfo info = unknown(0);
        info.range = Range{0, std::numeric_limits<int32_t>::max()};
        set(out, info);
        return;
      }
      case OpCode::kNumPrograms: {
        AxisInfo info = unknown(0);
        info.range = Range{1, std::numeric_limits<int32_t>::max()};
        set(out, info);
        return;
      }
      case OpCode::kBroadcast: return set(out, broadcast(op.operands[0], out_type));
      case OpCode::kExpandDims: return set(out, expand_dims(op.operands[0], op.attrs.axis));
      case OpCode::kAdd:
      case OpCode::kSub:
      case OpCode::kAddPtr: return set(out, add(op, r));
      case OpCode::kMul: return set(out, mul(op, r));
      case OpCode::kShl: return set(out, shl(op, r));
      case OpCode::kShr: return set(out, shr(op, r));
      case OpCode::kCmp: return set(out, cmp(op, r));
      case OpCode::kMin:
      case OpCode::kMax:
      case OpCode::kAnd:
      case OpCode::kOr:
      case OpCode::kSelect: return set(out, same_constancy(op, r));
      case OpCode::kBitcast:
        // A pointer view keeps each address, so its byte divisibility and its constancy; its
        // contiguity, counted in elements, only where the pointee's size stays.
        if (type(out).element.pointer) {
          AxisInfo view = get(op.operands[0]);
          if (scalar_type_bytes(type(out).element.scalar) != scalar_type_bytes(type(op.operands[0]).element.scalar)) {
            for (int64_t& run : view.contiguity) run = 1;
          }
          return set(out, view);
        }
        return set(out, same_constancy(op, r));
      case OpCode::kCast:
        if (is_int(out) && is_int(op.operands[0]) &&
            scalar_type_bits(out_type.element.scalar) >= scalar_type_bits(type(op.operands[0]).element.scalar)) {
          return set(out, get(op.operands[0]));
        }
        return set(out, same_constancy(op, r));
      default:
        for (ValueId result : op.results) set(result, unknown(rank(result)));
        return;
    }
  }

  AxisInfo induction(const Op& op) {
    AxisInfo index = unknown(0);
    index.divisibility[0] = std::min(get(op.operands[0]).divisibility[0], get(op.operands[2]).divisibility[0]);
    return index;
  }

  AxisInfo broadcast(ValueId in, const Type& out_type) {
    const AxisInfo& a = get(in);
    int r = static_cast<int>(out_type.shape.size());
    AxisInfo info = unknown(r);
    bool from_scalar = rank(in) == 0;
    for (int d = 0; d < r; ++d) {
      bool stretched = from_scalar || type(in).shape[d] == 1;
      int src = from_scalar ? 0 : d;
      info.divisibility[d] = a.divisibility[src];
      info.contiguity[d] = stretched ? 1 : a.contiguity[src];
      info.constancy[d] = stretched ? pow2_part(out_type.shape[d]) : a.constancy[src];
    }
    info.range = a.range;
    return info;
  }

  AxisInfo expand_dims(ValueId in, int axis) {
    const AxisInfo& a = get(in);
    if (rank(in) == 0) {
      AxisInfo info = a;
      return info;
    }
    AxisInfo info = a;
    bool all_single = std::all_of(a.contiguity.begin(), a.contiguity.end(), [](int64_t c) { return c == 1; });
    int64_t div = all_single ? *std::min_element(a.divisibility.begin(), a.divisibility.end()) : 1;
    info.contiguity.insert(info.contiguity.begin() + axis, 1);
    info.divisibility.insert(info.divisibility.begin() + axis, div);
    info.constancy.insert(info.constancy.begin() + axis, 1);
    return info;
  }

  AxisInfo add(const Op& op, int r) {
    const AxisInfo& a = get(op.operands[0]);
    const AxisInfo& b = get(op.operands[1]);
    int64_t scale = 1;
    if (op.code == OpCode::kAddPtr) scale = scalar_type_bytes(type(op.operands[0]).element.scalar);
    AxisInfo info = unknown(r);
    for (size_t d = 0; d < info.contiguity.size(); ++d) {
      int64_t contiguity = std::min(a.contiguity[d], b.constancy[d]);
      if (op.code != OpCode::kSub) contiguity = std::max(contiguity, std::min(a.constancy[d], b.contiguity[d]));
      info.contiguity[d] = contiguity;
      info.divisibility[d] = std::min(a.divisibility[d], std::min(kMaxDivisibility, b.divisibility[d] * scale));
      info.constancy[d] = std::min(a.constancy[d], b.constancy[d]);
    }
    if (op.code != OpCode::kAddPtr) info.range = range_op(op.code, a.range, b.range);
    return info;
  }

  AxisInfo mul(const Op& op, int r) {
    const AxisInfo& a = get(op.operands[0]);
    const AxisInfo& b = get(op.operands[1]);
    AxisInfo info = unknown(r);
    bool a_one = a.range == Range{1, 1};
    bool b_one = b.range == Range{1, 1};
    for (size_t d = 0; d < info.contiguity.size(); ++d) {
      info.contiguity[d] = b_one ? a.contiguity[d] : (a_one ? b.contiguity[d] : 1);
      info.divisibility[d] = std::min(kMaxDivisibility, a.divisibility[d] * b.divisibility[d]);
      info.constancy[d] = std::min(a.constancy[d], b.constancy[d]);
    }
    if (is_int(op.results[0])) {
      info.range = range_op(OpCode::kMul, a.range, b.range);
    } else {
      std::fill(info.divisibility.begin(), info.divisibility.end(), 1);
    }
    return info;
  }

  AxisInfo shl(const Op& op, int r) {
    AxisInfo info = same_constancy(op, r);
    const AxisInfo& a = get(op.operands[0]);
    const AxisInfo& b = get(op.operands[1]);
    if (b.range && b.range->first == b.range->second && b.range->first >= 0 && b.range->first < 30) {
      for (size_t d = 0; d < info.divisibility.size(); ++d) {
        info.divisibility[d] = std::min(kMaxDivisibility, a.divisibility[d] << b.range->first);
      }
    }
    return info;
  }

  // x >> s for a constant s: an aligned contiguous run of x, cut into aligned pieces of 2^s, is
  // constant over each piece (the shift floors, so negative values group the same way).
  AxisInfo shr(const Op& op, int r) {
    AxisInfo info = same_constancy(op, r);
    const AxisInfo& a = get(op.operands[0]);
    const AxisInfo& b = get(op.operands[1]);
    if (!b.range || b.range->first != b.range->second || b.range->first < 0 || b.range->first >= 30) return info;
    const int64_t piece = int64_t{1} << b.range->first;
    for (size_t d = 0; d < info.constancy.size(); ++d) {
      info.constancy[d] = std::max(info.constancy[d], std::min({a.contiguity[d], a.divisibility[d], piece}));
      // A multiple of 2^s (and of more) shifted right by s is an exact quotient; the rest of a
      // contiguous run shorter than 2^s shifts to the same value.
      if (a.divisibility[d] >= piece && a.contiguity[d] <= piece) info.divisibility[d] = a.divisibility[d] / piece;
    }
    if (a.range && a.range->first >= 0) info.range = Range{a.range->first >> b.range->first, a.range->second >> b.range->first};
    return info;
  }

  AxisInfo cmp(const Op& op, int r) {
    const AxisInfo& a = get(op.operands[0]);
    const AxisInfo& b = get(op.operands[1]);
    const std::vector<int64_t>& shape = type(op.results[0]).shape;
    AxisInfo info = unknown(r);
    bool ordered = op.attrs.cmp != CmpPredicate::kEq && op.attrs.cmp != CmpPredicate::kNe;
    for (size_t d = 0; d < info.constancy.size(); ++d) {
      int64_t full = shape.empty() ? 1 : pow2_part(shape[d]);
      int64_t constancy = std::min(a.constancy[d], b.constancy[d]);
      // An aligned contiguous run compared with a constant multiple of the run length: one answer.
      if (ordered && b.constancy[d] >= full) {
        constancy = std::max(constancy, std::min({a.contiguity[d], a.divisibility[d], b.divisibility[d]}));
      }
      if (ordered && a.constancy[d] >= full) {
        constancy = std::max(constancy, std::min({b.contiguity[d], b.divisibility[d], a.divisibility[d]}));
      }
      info.constancy[d] = constancy;
    }
    info.range = compare(op.attrs.cmp, a.range, b.range);
    return info;
  }

  AxisInfo same_constancy(const Op& op, int r) {
    AxisInfo info = unknown(r);
    bool first = true;
    for (ValueId operand : op.operands) {
      const AxisInfo& a = get(operand);
      for (size_t d = 0; d < info.constancy.size(); ++d) {
        info.constancy[d] = first ? a.constancy[d] : std::min(info.constancy[d], a.constancy[d]);
      }
      first = false;
    }
    if (op.code == OpCode::kAnd || op.code == OpCode::kOr || op.code == OpCode::kMin || op.code == OpCode::kMax) {
      const AxisInfo& a = get(op.operands[0]);
      const AxisInfo& b = get(op.operands[1]);
      if (type(op.results[0]).element.scalar == ScalarType::kI1 && a.range && b.range) {
        bool is_and = op.code == OpCode::kAnd || op.code == OpCode::kMin;
        info.range = is_and ? Range{std::min(a.range->first, b.range->first), std::min(a.range->second, b.range->second)}
                            : Range{std::max(a.range->first, b.range->first), std::max(a.range->second, b.range->second)};
      } else if (op.code == OpCode::kMin || op.code == OpCode::kMax) {
        info.range = range_op(op.code, a.range, b.range);
      }
    }
    // min, max and where pick one of two integers per element: a multiple of what divides every
    // element of both (a clamped offset keeps its alignment, so its accesses stay vectors). Only
    // runs of one element say that of every element.
    bool picks = op.code == OpCode::kMin || op.code == OpCode::kMax || op.code == OpCode::kSelect;
    if (picks && is_int(op.results[0])) {
      const AxisInfo& a = get(op.operands[op.code == OpCode::kSelect ? 1 : 0]);
      const AxisInfo& b = get(op.operands[op.code == OpCode::kSelect ? 2 : 1]);
      for (size_t d = 0; d < info.divisibility.size(); ++d) {
        int64_t each_a = a.contiguity[d] == 1 ? a.divisibility[d] : 1;
        int64_t each_b = b.contiguity[d] == 1 ? b.divisibility[d] : 1;
        info.divisibility[d] = std::min(each_a, each_b);
      }
    }
    return info;
  }

  LoweringState& state_;
};

}  // namespace

std::string AxisInfo::str() const {
  std::string text = absl::StrCat("contig [", absl::StrJoin(contiguity, ", "), "] div [",
                                  absl::StrJoin(divisibility, ", "), "] const [", absl::StrJoin(constancy, ", "), "]");
  if (range) absl::StrAppend(&text, " range [", range->first, ", ", range->second, "]");
  return text;
}

void analyze_axes(LoweringState& state) { Analysis(state).run(); }

}  // namespace monotile::dsl::lower
