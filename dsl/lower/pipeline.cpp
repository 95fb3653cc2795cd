// Pipeline planning: finds, in each `for` body, the dots whose two operands come straight from loads
// that can be staged (see pipeline.h), the pure ops their pointers are computed by, and the number
// of stages: the program's num_stages, else 4; fewer while they do not fit in shared memory.
#include "dsl/lower/pipeline.h"

#include <algorithm>
#include <map>
#include <set>

#include "dsl/lower/layout_assignment.h"
#include "dsl/lower/matrix_unit.h"
#include "dsl/lower/spelling.h"

namespace monotile::dsl::lower {
namespace {

constexpr int64_t kStageAlign = 128;  // the swizzle works on 128-byte lines
constexpr int64_t kWarpgroupAlign = 1024;  // eight 128-byte rows: one swizzle atom of the warpgroup MMA

void count_uses(const Block& block, std::map<ValueId, int>& uses, std::map<ValueId, const Op*>& producers) {
  for (const Op& op : block.ops) {
    for (ValueId operand : op.operands) ++uses[operand];
    for (ValueId result : op.results) producers[result] = &op;
    for (const Block& region : op.regions) count_uses(region, uses, producers);
  }
}

bool is_pure(const Op& op) {
  switch (op.code) {
    case OpCode::kConstant:
    case OpCode::kArange:
    case OpCode::kProgramId:
    case OpCode::kNumPrograms:
    case OpCode::kBroadcast:
    case OpCode::kExpandDims: return true;
    default: return is_elementwise(op.code);
  }
}

class Planner {
 public:
  explicit Planner(const LoweringState& state, int64_t reserve) : state_(state), reserve_(reserve) {
    count_uses(state.program.body, uses_, producers_);
  }

  PipelinePlan run() {
    walk(state_.program.body);
    return std::move(plan_);
  }

 private:
  const Type& type(ValueId v) const { return state_.program.type_of(v); }

  void walk(const Block& block) {
    for (const Op& op : block.ops) {
      if (op.code == OpCode::kFor) loop(op);
      for (const Block& region : op.regions) walk(region);
    }
  }

  void loop(const Op& for_op) {
    const Block& body = for_op.regions.at(0);
    std::set<const Op*> in_body;
    for (const Op& op : body.ops) in_body.insert(&op);
    PipelinedLoop pipelined;
    pipelined.loop = &for_op;
    std::set<const Op*> slice;
    for (const Op& op : body.ops) {
      if (op.code != OpCode::kDot) continue;
      StagedDot dot;
      dot.dot = &op;
      std::set<const Op*> dot_slice = slice;
      if (!operand(op, 0, body, in_body, dot.a, dot_slice) || !operand(op, 1, body, in_body, dot.b, dot_slice)) continue;
      slice = std::move(dot_slice);
      dot.warpgroup = warpgroup(dot);
      if (dot.warpgroup) pipelined.align = kWarpgroupAlign;
      pipelined.dots.push_back(dot);
    }
    int load_stages = 0;
    std::set<const Op*> dot_loads;  // a staged dot's operands are staged its way already
    for (const StagedDot& dot : pipelined.dots) dot_loads.insert({dot.a.load, dot.b.load});
    for (const Op& op : body.ops) {
      if (op.code != OpCode::kLoad || op.attrs.stages == 0 || dot_loads.contains(&op)) continue;
      StagedLoad staged;
      std::set<const Op*> load_slice = slice;
      if (!staged_load(op, body, in_body, staged, load_slice)) continue;
      slice = std::move(load_slice);
      load_stages = std::max(load_stages, op.attrs.stages);
      pipelined.loads.push_back(staged);
    }
    if (pipelined.dots.empty() && pipelined.loads.empty()) return;
    const int64_t align = pipelined.align;
    int64_t bytes = 0;
    for (StagedDot& dot : pipelined.dots) {
      for (StagedOperand* staged : {&dot.a, &dot.b}) {
        staged->offset = bytes;
        bytes += (staged->rows * staged->cols * 2 + align - 1) / align * align;
      }
    }
    for (StagedLoad& staged : pipelined.loads) {
      staged.offset = bytes;
      bytes += (staged.rows * staged.cols * staged.bytes + align - 1) / align * align;
    }
    int64_t budget = state_.target.shared_memory_per_block() - reserve_ - (align > kStageAlign ? align : 0);
    const int asked = state_.program.options.num_stages;
    int stages = pipelined.dots.empty() ? load_stages : std::max(asked != 0 ? asked : 4, load_stages);
    while (stages >= 2 && stages * bytes > budget) --stages;
    if (stages < 2) return;
    pipelined.stages = stages;
    pipelined.stage_bytes = bytes;
    pipelined.mma_in_flight = stages >= 3 && state_.program.options.mma != MmaKind::kWarpgroupSerial &&
                              pipelined.dots.size() == 1 && pipelined.dots[0].warpgroup &&
                              accumulates_across_iterations(*pipelined.dots[0].dot, body);
    pipelined.ahead = stages - (pipelined.mma_in_flight ? 2 : 1);
    for (const Op& op : body.ops) {
      if (slice.contains(&op)) pipelined.slice.push_back(&op);
    }
    plan_.loops.push_back(std::move(pipelined));
  }

  // Whether a staged dot runs on the warpgroup MMA: it fits (matrix_unit.h) and both operands are
  // K-contiguous rows of 128 bytes, the layout of the unit's 128-byte swizzle.
  bool warpgroup(const StagedDot& dot) const {
    const Type& a = type(dot.dot->operands[0]);
    const Type& b = type(dot.dot->operands[1]);
    if (!warpgroup_mma_fits(state_.target, state_.program.options, a.element.scalar, b.element.scalar, a.shape[0],
                            b.shape[1], a.shape[1])) {
      return false;
    }
    return !dot.a.k_rows && !dot.b.k_rows && dot.a.cols * 2 == 128 && dot.b.cols * 2 == 128;
  }

  // Whether the dot's accumulator is a carried value that only it reads and its result only goes
  // back into that carried value: nothing in the body then touches the accumulator while its MMAs run.
  bool accumulates_across_iterations(const Op& dot, const Block& body) {
    const Op& yield = body.ops.back();
    for (size_t i = 1; i < body.args.size(); ++i) {
      if (body.args[i] != dot.operands[2]) continue;
      return uses_[body.args[i]] == 1 && uses_[dot.results[0]] == 1 && yield.operands.at(i - 1) == dot.results[0];
    }
    return false;
  }

  // Whether dot operand `which` can be staged; fills `staged` and adds its pointer's body ops to `slice`.
  bool operand(const Op& dot, int which, const Block& body, const std::set<const Op*>& in_body,
               StagedOperand& staged, std::set<const Op*>& slice) {
    ValueId value = dot.operands[which];
    if (uses_[value] != 1) return false;
    const Op* producer = producer_of(value);  // none: a parameter, the index or a carried value
    if (producer == nullptr || !in_body.contains(producer)) return false;
    const Type& a = type(dot.operands[0]);
    const Type& b = type(dot.operands[1]);
    std::optional<MatrixUnit> unit =
        choose_matrix_unit(state_.target, a.element.scalar, b.element.scalar, a.shape[0], b.shape[1], a.shape[1]);
    if (!unit || unit->shape.m != 16 || unit->shape.n != 8 || unit->shape.k != 16) return false;
    if (producer->code == OpCode::kTrans) {
      const std::vector<int64_t>& perm = producer->attrs.ints;
      if (!(perm.empty() || perm == std::vector<int64_t>{1, 0})) return false;
      staged.trans = producer;
      value = producer->operands[0];
      if (uses_[value] != 1) return false;
      producer = producer_of(value);
      if (producer == nullptr || !in_body.contains(producer)) return false;
    }
    if (producer->code != OpCode::kLoad) return false;
    const Op& load = *producer;
    if (load.attrs.has_other || load.attrs.order != MemOrder::kPlain) return false;
    if (load.attrs.has_mask && !state_.axis[load.operands[1]].known_true()) {
      const AxisInfo& mask = state_.axis[load.operands[1]];
      if (mask.constancy.size() != 2 || mask.constancy[1] < 8) return false;
      if (!pointer_slice(load.operands[1], body, in_body, slice)) return false;
      staged.mask = load.operands[1];
    }
    const Type& tile = type(load.results[0]);
    if (tile.shape.size() != 2 || scalar_type_bytes(tile.element.scalar) != 2) return false;
    ValueId ptr = load.operands[0];
    const AxisInfo& info = state_.axis[ptr];
    if (info.contiguity.size() != 2 || info.contiguity[1] < 8 || info.divisibility[1] % 16 != 0) return false;
    if (tile.shape[0] % 8 != 0 || tile.shape[1] % 8 != 0) return false;
    if (!pointer_slice(ptr, body, in_body, slice)) return false;
    staged.load = &load;
    staged.rows = tile.shape[0];
    staged.cols = tile.shape[1];
    // A [M, K] and trans([N, K]) keep K along the contiguous dim; trans([K, M]) and B [K, N] do not.
    staged.k_rows = (which == 0) == (staged.trans != nullptr);
    return true;
  }

  // Whether a load the program asked to stage qualifies (AccessOptions::stages); fills `staged` and
  // adds its pointer's (and mask's) body ops to `slice`.
  bool staged_load(const Op& load, const Block& body, const std::set<const Op*>& in_body, StagedLoad& staged,
                   std::set<const Op*>& slice) {
    if (load.attrs.has_other || load.attrs.order != MemOrder::kPlain) return false;
    const Type& tile = type(load.results[0]);
    if (tile.shape.size() != 2 || tile.element.pointer) return false;
    const int bytes = scalar_type_bytes(tile.element.scalar);
    if (bytes > 16 || 16 % bytes != 0 || tile.shape[1] * bytes % 16 != 0) return false;
    const int64_t unit = 16 / bytes;
    const AxisInfo& info = state_.axis[load.operands[0]];
    if (info.contiguity.size() != 2 || info.contiguity[1] < unit || info.divisibility[1] % 16 != 0) return false;
    if (load.attrs.has_mask && !state_.axis[load.operands[1]].known_true()) {
      const AxisInfo& mask = state_.axis[load.operands[1]];
      if (mask.constancy.size() != 2 || mask.constancy[1] < unit) return false;
      if (!pointer_slice(load.operands[1], body, in_body, slice)) return false;
      staged.mask = load.operands[1];
    }
    if (!pointer_slice(load.operands[0], body, in_body, slice)) return false;
    staged.load = &load;
    staged.rows = tile.shape[0];
    staged.cols = tile.shape[1];
    staged.bytes = bytes;
    return true;
  }

  const Op* producer_of(ValueId value) const {
    auto found = producers_.find(value);
    return found == producers_.end() ? nullptr : found->second;
  }

  // Adds the body ops `value` depends on to `slice`; false when one is not pure or reads a carried value.
  bool pointer_slice(ValueId value, const Block& body, const std::set<const Op*>& in_body,
                     std::set<const Op*>& slice) {
    for (size_t i = 1; i < body.args.size(); ++i) {
      if (body.args[i] == value) return false;  // a carried value: unknown for iterations ahead
    }
    auto found = producers_.find(value);
    if (found == producers_.end()) return true;  // a parameter or the loop index
    const Op* producer = found->second;
    if (!in_body.contains(producer)) return true;  // defined before the loop
    if (!is_pure(*producer)) return false;
    if (slice.contains(producer)) return true;
    slice.insert(producer);
    for (ValueId operand : producer->operands) {
      if (!pointer_slice(operand, body, in_body, slice)) return false;
    }
    return true;
  }

  const LoweringState& state_;
  int64_t reserve_;
  std::map<ValueId, int> uses_;
  std::map<ValueId, const Op*> producers_;
  PipelinePlan plan_;
};

}  // namespace

const PipelinedLoop* PipelinePlan::loop_of(const Op* for_op) const {
  for (const PipelinedLoop& loop : loops) {
    if (loop.loop == for_op) return &loop;
  }
  return nullptr;
}

const StagedDot* PipelinePlan::staged_dot(const Op* dot) const {
  for (const PipelinedLoop& loop : loops) {
    for (const StagedDot& staged : loop.dots) {
      if (staged.dot == dot) return &staged;
    }
  }
  return nullptr;
}

const StagedLoad* PipelinePlan::staged_load(const Op* load) const {
  for (const PipelinedLoop& loop : loops) {
    for (const StagedLoad& staged : loop.loads) {
      if (staged.load == load) return &staged;
    }
  }
  return nullptr;
}

bool PipelinePlan::is_staged(const Op* op) const {
  for (const PipelinedLoop& loop : loops) {
    for (const StagedDot& staged : loop.dots) {
      for (const StagedOperand* operand : {&staged.a, &staged.b}) {
        if (operand->load == op || operand->trans == op) return true;
      }
    }
  }
  return false;
}

PipelinePlan plan_pipelines(const LoweringState& state, int64_t reserve_bytes) {
  if (!spelling_for(state.target).stages_matrix_operands(state.target)) return {};
  return Planner(state, reserve_bytes).run();
}

}  // namespace monotile::dsl::lower
