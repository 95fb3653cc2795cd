// Layout assignment: a forward pass (anchors and propagation, loop-carried values iterated to a fixed
// point) repeated while a backward step re-homes loads into the layout their users settled on.
#include "dsl/lower/layout_assignment.h"

#include <algorithm>
#include <array>
#include <map>

#include "dsl/lower/matrix_unit.h"
#include "support/check.h"

namespace monotile::dsl::lower {
namespace {

constexpr int kMaxRounds = 6;
// A dot's operand held in its fragment layout (demand_fragments): at most this many registers a
// thread, in runs of at most 16 elements along K (16 bytes of u8, two 16-byte loads of bf16).
constexpr int64_t kMaxFragmentRegisters = 64;
constexpr int64_t kMaxFragmentRun = 16;

// How costly a value's layout is to change: loads can be re-issued, dots cannot.
enum Strength { kWeak = 1, kDerived = 2, kStrong = 3 };

class Assignment {
 public:
  explicit Assignment(LoweringState& state) : state_(state) {}

  void run() {
    for (int round = 0; round < kMaxRounds; ++round) {
      state_.layouts.assign(state_.program.value_types.size(), std::nullopt);
      strength_.assign(state_.program.value_types.size(), kWeak);
      for (const Param& param : state_.program.params) set(param.value, state_.scalar_layout(), kStrong);
      block(state_.program.body);
      if (!rehome_loads()) return;
    }
  }

 private:
  const Type& type(ValueId v) const { return state_.program.type_of(v); }
  bool is_scalar(ValueId v) const { return type(v).is_scalar(); }
  bool lazy(ValueId v) const { return !is_scalar(v) && !state_.layouts[v].has_value(); }

  void set(ValueId v, const Layout& layout, int strength) {
    state_.layouts[v] = layout;
    strength_[v] = strength;
  }

  // The layout `v` has, or the default for its shape when it is lazy.
  Layout layout_or_default(ValueId v) const {
    if (is_scalar(v)) return state_.scalar_layout();
    if (state_.layouts[v]) return *state_.layouts[v];
    return default_layout(state_, type(v).shape);
  }

  void block(const Block& block) {
    for (const Op& op : block.ops) this->op(op);
  }

  void op(const Op& op) {
    switch (op.code) {
      case OpCode::kFor:
      case OpCode::kWhile: return loop(op);
      case OpCode::kIf: return branch(op);
      default: break;
    }
    for (const Block& region : op.regions) {
      for (ValueId arg : region.args) set(arg, state_.scalar_layout(), kStrong);
      block(region);
    }
    for (ValueId result : op.results) {
      if (is_scalar(result)) set(result, state_.scalar_layout(), kStrong);
    }
    if (op.results.empty() || is_scalar(op.results[0])) return;
    ValueId out = op.results[0];
    switch (op.code) {
      case OpCode::kConstant:
      case OpCode::kArange:
      case OpCode::kBroadcast:
      case OpCode::kExpandDims: return;  // lazy
      case OpCode::kLoad: {
        auto found = load_overrides_.find(&op);
        set(out, found != load_overrides_.end() ? found->second : default_layout(state_, type(out).shape), kWeak);
        return;
      }
      case OpCode::kAtomicRmw:
      case OpCode::kAtomicCas: {
        ValueId value = op.operands[1];
        set(out, layout_or_default(value), kDerived);
        return;
      }
      case OpCode::kReduce:
      case OpCode::kArgReduce:
        set(out, layout_or_default(op.operands[0]).slice(op.attrs.axis), kDerived);
        return;
      case OpCode::kScan:
      case OpCode::kSort:
        for (ValueId result : op.results) set(result, layout_or_default(op.operands[0]), kDerived);
        return;
      case OpCode::kDot: {
        const Type& a = type(op.operands[0]);
        const Type& b = type(op.operands[1]);
        std::optional<MatrixUnit> unit = choose_matrix_unit(state_.target, a.element.scalar, b.element.scalar,
                                                            a.shape[0], b.shape[1], a.shape[1]);
        if (unit) {
          bool warpgroup = warpgroup_mma_fits(state_.target, state_.program.options, a.element.scalar,
                                              b.element.scalar, a.shape[0], b.shape[1], a.shape[1]);
          set(out, accumulator_layout(*unit, a.shape[0], b.shape[1], state_.target.warp_size(),
                                      state_.program.options.num_warps, warpgroup), kStrong);
        } else {
          set(out, layout_or_default(op.operands[2]), kDerived);
        }
        return;
      }
      case OpCode::kUnpackBf16:
      case OpCode::kMxfp4WordPairs: {
        // Each word's halves (each packed word's four pairs) stay in its thread (emit_shape.cpp's
        // unpack_bf16 and mxfp4_word_pairs then move nothing).
        ValueId in = op.operands[0];
        if (!lazy(in)) {
          set(out, state_.layouts[in]->widened(op.code == OpCode::kUnpackBf16 ? 2 : 4), strength_[in]);
          return;
        }
        break;
      }
      case OpCode::kTrans: {
        // A trans moves no element between threads when its result keeps the operand's layout with
        // the dims reordered (emit_shape.cpp then only renames registers).
        ValueId in = op.operands[0];
        if (!lazy(in)) {
          set(out, state_.layouts[in]->permuted(op.attrs.ints), strength_[in]);
          return;
        }
        break;
      }
      default: break;
    }
    if (is_elementwise(op.code)) return elementwise(op);
    for (ValueId result : op.results) {
      if (!is_scalar(result)) set(result, default_layout(state_, type(result).shape), kDerived);
    }
  }

  void elementwise(const Op& op) {
    ValueId best = kNoValue;
    for (ValueId operand : op.operands) {
      if (is_scalar(operand) || lazy(operand)) continue;
      if (best == kNoValue || strength_[operand] > strength_[best]) best = operand;
    }
    if (best == kNoValue) return;  // every operand lazy: so is the result
    set(op.results[0], *state_.layouts[best], strength_[best]);
  }

  // Loop-carried values start in their init's layout and follow a stronger yielded layout; the body
  // is re-walked until the carried layouts stop changing.
  void loop(const Op& op) {
    bool is_for = op.code == OpCode::kFor;
    size_t first_init = is_for ? 3 : 0;
    size_t carried = op.operands.size() - first_init;
    std::vector<Layout> layouts;
    std::vector<int> strengths;
    for (size_t i = 0; i < carried; ++i) {
      ValueId init = op.operands[first_init + i];
      layouts.push_back(layout_or_default(init));
      strengths.push_back(lazy(init) || is_scalar(init) ? kWeak : strength_[init]);
    }
    const Block& body = op.regions[is_for ? 0 : 1];
    for (int round = 0; round < kMaxRounds; ++round) {
      for (const Block& region : op.regions) {
        size_t offset = (is_for && &region == &body) ? 1 : 0;
        if (offset) set(region.args[0], state_.scalar_layout(), kStrong);
        for (size_t i = 0; i < carried && i + offset < region.args.size(); ++i) {
          set(region.args[i + offset], layouts[i], strengths[i]);
        }
        block(region);
      }
      const Op& yield = body.ops.back();
      bool changed = false;
      for (size_t i = 0; i < carried; ++i) {
        ValueId value = yield.operands.at(i);
        if (is_scalar(value) || lazy(value)) continue;
        if (*state_.layouts[value] != layouts[i] && strength_[value] > strengths[i]) {
          layouts[i] = *state_.layouts[value];
          strengths[i] = strength_[value];
          changed = true;
        }
      }
      if (!changed) break;
    }
    for (size_t i = 0; i < carried; ++i) set(op.results[i], layouts[i], strengths[i]);
  }

  void branch(const Op& op) {
    for (const Block& region : op.regions) block(region);
    for (size_t i = 0; i < op.results.size(); ++i) {
      ValueId result = op.results[i];
      if (is_scalar(result)) {
        set(result, state_.scalar_layout(), kStrong);
        continue;
      }
      std::optional<Layout> chosen;
      int strength = kWeak;
      for (const Block& region : op.regions) {
        ValueId value = region.ops.back().operands.at(i);
        if (!lazy(value) && (!chosen || strength_[value] > strength)) {
          chosen = state_.layouts[value];
          strength = strength_[value];
        }
      }
      set(result, chosen ? *chosen : default_layout(state_, type(result).shape), strength);
    }
  }

  // Demands: each elementwise op wants its operands in its own layout; through lazy operands
  // (broadcast, expand_dims, pure ops) that demand reaches the non-lazy values they are built from.
  // A value whose demands all agree on another layout, and that comes from loads through elementwise
  // ops only, has its loads re-issued in that layout (the next forward pass carries it through).
  bool rehome_loads() {
    demands_.clear();
    collect_demands(state_.program.body);
    bool changed = false;
    for (const auto& [value, wanted] : demands_) {
      bool agree = true;
      for (const Layout& layout : wanted) agree = agree && layout == wanted.front();
      if (!agree || wanted.front() == *state_.layouts[value]) continue;
      changed = rehome(value, wanted.front(), 0) || changed;
    }
    return changed;
  }

  void collect_demands(const Block& block) {
    for (const Op& op : block.ops) {
      for (const Block& region : op.regions) collect_demands(region);
      if (op.code == OpCode::kDot) demand_fragments(op);
      if (!is_elementwise(op.code) || op.results.empty() || lazy(op.results[0]) || is_scalar(op.results[0])) continue;
      const Layout& layout = *state_.layouts[op.results[0]];
      for (ValueId operand : op.operands) demand(operand, layout, 0);
    }
  }

  // A matrix-unit dot wants its operands in the layouts whose registers are the unit's fragments
  // (matrix_unit.h fragment_layout): then it needs no shared memory and no barrier. Each operand is
  // asked for where that layout holds at most kMaxFragmentRegisters a thread (an operand copied to
  // every warp, as a GEMV's activations, costs registers that a staged one does not).
  void demand_fragments(const Op& op) {
    const Type& a = type(op.operands[0]);
    const Type& b = type(op.operands[1]);
    const int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
    std::optional<MatrixUnit> unit = choose_matrix_unit(state_.target, a.element.scalar, b.element.scalar, m, n, k);
    if (!unit || warpgroup_mma_fits(state_.target, state_.program.options, a.element.scalar, b.element.scalar, m, n, k))
      return;
    const Layout& accumulator = *state_.layouts[op.results[0]];
    const int run = static_cast<int>(std::min<int64_t>(kMaxFragmentRun, pow2_part(k / unit->k_tpw)));
    for (int which = 0; which < 2; ++which) {
      std::optional<Layout> wanted = fragment_layout(*unit, which, k, accumulator, run);
      if (wanted && wanted->num_regs() <= kMaxFragmentRegisters) demand(op.operands[which], *wanted, 0);
    }
  }

  void demand(ValueId value, const Layout& layout, int depth) {
    if (is_scalar(value) || depth > 64) return;
    if (!lazy(value)) {
      if (*state_.layouts[value] != layout) demands_[value].push_back(layout);
      return;
    }
    const Op* producer = producer_of(value);
    if (producer == nullptr) return;
    if (producer->code == OpCode::kBroadcast) {
      ValueId in = producer->operands[0];
      if (is_scalar(in)) return;
      std::vector<DimLayout> dims = layout.dims();
      for (size_t d = 0; d < dims.size(); ++d) {
        if (type(in).shape[d] == 1) dims[d] = DimLayout{};
      }
      demand(in, Layout::make(dims, layout.warp_size(), layout.num_warps()), depth + 1);
    } else if (producer->code == OpCode::kExpandDims) {
      demand(producer->operands[0], layout.slice(producer->attrs.axis), depth + 1);
    } else if (is_elementwise(producer->code)) {
      for (ValueId operand : producer->operands) demand(operand, layout, depth + 1);
    }
  }

  // Re-issues the loads `value` comes from (through weak elementwise ops, trans, unpack_bf16 and
  // mxfp4_word_pairs, and into the init and the yield of a loop-carried value) in `layout`.
  bool rehome(ValueId value, const Layout& layout, int depth) {
    if (is_scalar(value) || lazy(value) || depth > 64) return false;
    const Op* producer = producer_of(value);
    if (producer == nullptr) {
      auto carried = carried_.find(value);
      if (carried == carried_.end() || strength_[value] != kWeak) return false;
      bool changed = false;
      for (ValueId end : carried->second) changed = rehome(end, layout, depth + 1) || changed;
      return changed;
    }
    if (producer->code == OpCode::kLoad) {
      if (load_overrides_.contains(producer)) return false;
      load_overrides_.emplace(producer, layout);
      return true;
    }
    if (producer->code == OpCode::kTrans) {
      std::vector<int64_t> inverse(producer->attrs.ints.size());
      for (size_t d = 0; d < inverse.size(); ++d) inverse[producer->attrs.ints[d]] = static_cast<int64_t>(d);
      return strength_[value] == kWeak && rehome(producer->operands[0], layout.permuted(inverse), depth + 1);
    }
    if (producer->code == OpCode::kUnpackBf16) {
      std::optional<Layout> words = layout.words();
      return strength_[value] == kWeak && words && rehome(producer->operands[0], *words, depth + 1);
    }
    if (producer->code == OpCode::kMxfp4WordPairs) {
      std::optional<Layout> packed = layout.narrowed(4);
      if (strength_[value] != kWeak || !packed) return false;
      const bool words_moved = rehome(producer->operands[0], *packed, depth + 1);
      return rehome(producer->operands[1], *packed, depth + 1) || words_moved;
    }
    if (!is_elementwise(producer->code) || strength_[value] != kWeak) return false;
    bool changed = false;
    for (ValueId operand : producer->operands) changed = rehome(operand, layout, depth + 1) || changed;
    return changed;
  }

  const Op* producer_of(ValueId value) {
    if (producers_.empty()) index_producers(state_.program.body);
    auto found = producers_.find(value);
    return found == producers_.end() ? nullptr : found->second;
  }

  void index_producers(const Block& block) {
    for (const Op& op : block.ops) {
      for (ValueId result : op.results) producers_[result] = &op;
      for (const Block& region : op.regions) index_producers(region);
      if (op.code != OpCode::kFor) continue;
      // A `for` body's argument i + 1 is carried: its init is operand 3 + i, its next value the
      // yield's operand i.
      const Block& body = op.regions[0];
      for (size_t i = 0; i + 3 < op.operands.size() && i + 1 < body.args.size(); ++i) {
        carried_[body.args[i + 1]] = {op.operands[3 + i], body.ops.back().operands.at(i)};
      }
    }
  }

  LoweringState& state_;
  std::vector<int> strength_;
  std::map<ValueId, const Op*> producers_;
  std::map<ValueId, std::array<ValueId, 2>> carried_;  // a loop body's carried argument: init, yield
  std::map<const Op*, Layout> load_overrides_;
  std::map<ValueId, std::vector<Layout>> demands_;
};

void collect_memory_widths(const LoweringState& state, const Block& block,
                           std::map<std::vector<int64_t>, int>& narrowest) {
  for (const Op& op : block.ops) {
    if (op.code == OpCode::kLoad || op.code == OpCode::kStore) {
      const Type& ptr = state.program.type_of(op.operands[0]);
      if (!ptr.is_scalar()) {
        int bytes = scalar_type_bytes(ptr.element.scalar);
        auto [it, inserted] = narrowest.emplace(ptr.shape, bytes);
        if (!inserted) it->second = std::min(it->second, bytes);
      }
    }
    for (const Block& region : op.regions) collect_memory_widths(state, region, narrowest);
  }
}

}  // namespace

bool is_elementwise(OpCode code) {
  return (code >= OpCode::kAdd && code <= OpCode::kAddPtr);
}

Layout default_layout(const LoweringState& state, const std::vector<int64_t>& shape) {
  auto found = state.access_bytes.find(shape);
  int bytes = found == state.access_bytes.end() ? 4 : found->second;
  return Layout::blocked(shape, 16 / bytes, state.target.warp_size(), state.program.options.num_warps);
}

void assign_layouts(LoweringState& state) {
  state.access_bytes.clear();
  collect_memory_widths(state, state.program.body, state.access_bytes);
  Assignment(state).run();
}

}  // namespace monotile::dsl::lower
