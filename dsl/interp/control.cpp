// Runtime control flow: for (lo, hi, step, carried...), if with results, while (cond region, body
// region). Carried values are copied between iterations (regions reuse their values' storage), and
// every iteration checks the launch's cancellation flag so a failed instance stops the others.
#include "absl/strings/str_format.h"
#include "dsl/interp/ops.h"

namespace monotile::dsl::interp {
namespace {

bool cancelled(const Frame& frame) { return frame.shared->cancelled.load(std::memory_order_relaxed); }

void set_results(Frame& frame, const Op& op, std::vector<Tile>& carried) {
  for (size_t i = 0; i < op.results.size(); ++i) frame.value(op.results[i]) = std::move(carried[i]);
}

absl::Status exec_for(Frame& frame, const Op& op) {
  const ScalarType index_type = frame.operand_type(op, 0).element.scalar;
  const int64_t lo = frame.operand(op, 0).ints.at(0);
  const int64_t hi = frame.operand(op, 1).ints.at(0);
  const int64_t step = frame.operand(op, 2).ints.at(0);
  if (step == 0) return op_error(frame, op, "step is zero; hint: a loop must advance");
  const Block& body = op.regions.at(0);
  const size_t carried_count = op.operands.size() - 3;
  std::vector<Tile> carried(carried_count), next;
  for (size_t i = 0; i < carried_count; ++i) carried[i] = frame.operand(op, 3 + i);
  Tile index;
  index.ints.resize(1);
  std::vector<const Tile*> args(carried_count + 1);
  for (int64_t i = lo; step > 0 ? i < hi : i > hi;) {
    if (cancelled(frame)) return cancelled_error(frame, op);
    index.ints[0] = i;
    args[0] = &index;
    for (size_t c = 0; c < carried_count; ++c) args[c + 1] = &carried[c];
    absl::Status status = run_region(frame, body, args, next);
    if (!status.ok()) return status;
    if (next.size() != carried_count) {
      return op_error(frame, op, absl::StrFormat("body yields %d values, expected %d", next.size(), carried_count));
    }
    std::swap(carried, next);
    // An index that would overflow its type has passed every bound: the loop is over.
    int64_t next_index = 0;
    if (__builtin_add_overflow(i, step, &next_index) ||
        wrap_integer(index_type, static_cast<uint64_t>(next_index)) != next_index) {
      break;
    }
    i = next_index;
  }
  set_results(frame, op, carried);
  return absl::OkStatus();
}

absl::Status exec_if(Frame& frame, const Op& op) {
  const bool condition = frame.operand(op, 0).ints.at(0) != 0;
  std::vector<Tile> results;
  const size_t region = condition ? 0 : 1;
  if (region < op.regions.size()) {
    absl::Status status = run_region(frame, op.regions[region], {}, results);
    if (!status.ok()) return status;
  }
  if (results.size() != op.results.size()) {
    return op_error(frame, op, absl::StrFormat("%s branch yields %d values, expected %d", condition ? "then" : "else",
                                               results.size(), op.results.size()));
  }
  set_results(frame, op, results);
  return absl::OkStatus();
}

absl::Status exec_while(Frame& frame, const Op& op) {
  std::vector<Tile> carried(op.operands.size()), condition, next;
  for (size_t i = 0; i < carried.size(); ++i) carried[i] = frame.operand(op, i);
  std::vector<const Tile*> args(carried.size());
  for (;;) {
    if (cancelled(frame)) return cancelled_error(frame, op);
    for (size_t c = 0; c < carried.size(); ++c) args[c] = &carried[c];
    absl::Status status = run_region(frame, op.regions.at(0), args, condition);
    if (!status.ok()) return status;
    if (condition.size() != 1 || condition[0].ints.size() != 1) {
      return op_error(frame, op, "condition region must yield one i1 scalar");
    }
    if (condition[0].ints[0] == 0) break;
    status = run_region(frame, op.regions.at(1), args, next);
    if (!status.ok()) return status;
    if (next.size() != carried.size()) {
      return op_error(frame, op, absl::StrFormat("body yields %d values, expected %d", next.size(), carried.size()));
    }
    std::swap(carried, next);
  }
  set_results(frame, op, carried);
  return absl::OkStatus();
}

}  // namespace

absl::Status exec_control(Frame& frame, const Op& op) {
  switch (op.code) {
    case OpCode::kFor: return exec_for(frame, op);
    case OpCode::kIf: return exec_if(frame, op);
    case OpCode::kWhile: return exec_while(frame, op);
    default: return op_error(frame, op, "not a control-flow op");
  }
}

}  // namespace monotile::dsl::interp
