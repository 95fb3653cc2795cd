// The op dispatcher and block runner: one switch per op picks its family; families loop over whole
// tiles, so the per-element cost carries no dispatch.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dsl/interp/ops.h"
#include "support/strings.h"

namespace monotile::dsl::interp {

std::string lane_str(std::span<const int64_t> shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    index[i] = flat % shape[i];
    flat /= shape[i];
  }
  return absl::StrCat("[", absl::StrJoin(index, ", "), "]");
}

std::string op_context(const Frame& frame, const Op& op) {
  return absl::StrFormat("%s at %s in \"%s\" instance (%d, %d, %d)", to_absl(op_name(op.code)), op.loc.str(),
                         frame.program->name, frame.program_id[0], frame.program_id[1], frame.program_id[2]);
}

absl::Status op_error(const Frame& frame, const Op& op, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(op_context(frame, op), ": ", to_absl(what)));
}

absl::Status cancelled_error(const Frame& frame, const Op& op) {
  return absl::CancelledError(
      absl::StrCat(op_context(frame, op), ": stopped because another program instance failed"));
}

absl::Status exec_op(Frame& frame, const Op& op) {
  switch (op.code) {
    case OpCode::kConstant:
    case OpCode::kArange:
    case OpCode::kProgramId:
    case OpCode::kNumPrograms:
    case OpCode::kBroadcast:
    case OpCode::kExpandDims:
    case OpCode::kReshape:
    case OpCode::kTrans:
    case OpCode::kJoin:
    case OpCode::kSplit:
    case OpCode::kCat: return exec_shape(frame, op);
    case OpCode::kAdd:
    case OpCode::kSub:
    case OpCode::kMul:
    case OpCode::kDiv:
    case OpCode::kRem:
    case OpCode::kMin:
    case OpCode::kMax:
    case OpCode::kAnd:
    case OpCode::kOr:
    case OpCode::kXor:
    case OpCode::kShl:
    case OpCode::kShr:
    case OpCode::kUmulhi:
    case OpCode::kCmp:
    case OpCode::kNeg:
    case OpCode::kNot:
    case OpCode::kAbs:
    case OpCode::kExp:
    case OpCode::kExp2:
    case OpCode::kLog:
    case OpCode::kLog2:
    case OpCode::kSqrt:
    case OpCode::kRsqrt:
    case OpCode::kSin:
    case OpCode::kCos:
    case OpCode::kTanh:
    case OpCode::kSigmoid:
    case OpCode::kSoftplus:
    case OpCode::kErf:
    case OpCode::kFloor:
    case OpCode::kCeil:
    case OpCode::kFma:
    case OpCode::kSelect: return exec_elementwise(frame, op);
    case OpCode::kCast:
    case OpCode::kBitcast:
    case OpCode::kAddPtr:
    case OpCode::kDequantMxfp4:
    case OpCode::kMxfp4Pairs:
    case OpCode::kUnpackBf16:
    case OpCode::kMxfp4WordPairs: return exec_convert(frame, op);
    case OpCode::kLoad:
    case OpCode::kStore:
    case OpCode::kPrefetch: return exec_memory(frame, op);
    case OpCode::kAtomicRmw:
    case OpCode::kAtomicCas:
    case OpCode::kFence:
    case OpCode::kBarrier:
    case OpCode::kGlobalTimer:
    case OpCode::kWaitUntil:
    case OpCode::kLaunchDependents:
    case OpCode::kWaitGridDependency: return exec_sync(frame, op);
    case OpCode::kReduce:
    case OpCode::kArgReduce:
    case OpCode::kScan: return exec_reduction(frame, op);
    case OpCode::kSort:
    case OpCode::kTopK: return exec_sort(frame, op);
    case OpCode::kDot: return exec_dot(frame, op);
    case OpCode::kFor:
    case OpCode::kIf:
    case OpCode::kWhile: return exec_control(frame, op);
    case OpCode::kAssert:
    case OpCode::kPrint: return exec_debug(frame, op);
    case OpCode::kYield: break;  // handled by run_block
  }
  return op_error(frame, op, "op is not valid here (a yield outside a region's end?)");
}

absl::Status run_block(Frame& frame, const Block& block, const Op** yield) {
  if (yield != nullptr) *yield = nullptr;
  for (const Op& op : block.ops) {
    if (op.code == OpCode::kYield) {
      if (yield != nullptr) *yield = &op;
      return absl::OkStatus();
    }
    absl::Status status = exec_op(frame, op);
    if (!status.ok()) [[unlikely]] return status;
  }
  return absl::OkStatus();
}

absl::Status run_region(Frame& frame, const Block& block, std::span<const Tile* const> args,
                        std::vector<Tile>& results) {
  for (size_t i = 0; i < args.size() && i < block.args.size(); ++i) {
    Tile& slot = frame.value(block.args[i]);
    if (&slot != args[i]) slot = *args[i];  // assignment reuses the slot's capacity
  }
  const Op* yield = nullptr;
  absl::Status status = run_block(frame, block, &yield);
  if (!status.ok()) return status;
  const size_t count = yield == nullptr ? 0 : yield->operands.size();
  results.resize(count);
  for (size_t i = 0; i < count; ++i) results[i] = frame.value(yield->operands[i]);
  return absl::OkStatus();
}

}  // namespace monotile::dsl::interp
