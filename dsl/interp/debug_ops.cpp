// device_assert (an error naming its message, line, instance and the first failing lane) and print
// (one block of text per instance and op, written whole under a lock so instances do not interleave).
#include <iostream>
#include <sstream>

#include "absl/strings/str_format.h"
#include "dsl/interp/ops.h"
#include "support/strings.h"

namespace monotile::dsl::interp {
namespace {

absl::Status exec_assert(Frame& frame, const Op& op) {
  const std::vector<int64_t>& condition = frame.operand(op, 0).ints;
  for (size_t i = 0; i < condition.size(); ++i) {
    if (condition[i] != 0) continue;
    const Type& type = frame.operand_type(op, 0);
    std::string lane = type.is_scalar() ? "" : " at lane " + lane_str(type.shape, static_cast<int64_t>(i));
    return absl::FailedPreconditionError(absl::StrFormat(
        "device_assert failed at %s in \"%s\" instance (%d, %d, %d)%s: %s", op.loc.str(), frame.program->name,
        frame.program_id[0], frame.program_id[1], frame.program_id[2], lane, op.attrs.text));
  }
  return absl::OkStatus();
}

void print_tile(std::ostringstream& text, const Type& type, const Tile& tile) {
  text << type.str() << " ";
  if (!type.is_scalar()) text << "[";
  for (size_t i = 0; i < tile.size(); ++i) {
    if (i > 0) text << ", ";
    if (!tile.floats.empty()) text << absl::StrFormat("%.9g", tile.floats[i]);
    else if (type.element.pointer) text << absl::StrFormat("0x%x", tile.ints[i]);
    else text << tile.ints[i];
  }
  if (!type.is_scalar()) text << "]";
}

absl::Status exec_print(Frame& frame, const Op& op) {
  std::ostringstream text;
  text << op.attrs.text << " (" << op.loc.str() << ", instance " << frame.program_id[0] << ", "
       << frame.program_id[1] << ", " << frame.program_id[2] << "):";
  for (size_t i = 0; i < op.operands.size(); ++i) {
    text << (i == 0 ? " " : "; ");
    print_tile(text, frame.operand_type(op, i), frame.operand(op, i));
  }
  text << "\n";
  std::lock_guard<std::mutex> lock(frame.shared->output_mutex);
  std::ostream& out = frame.shared->options->print_stream != nullptr ? *frame.shared->options->print_stream : std::cout;
  out << text.str();
  out.flush();
  return absl::OkStatus();
}

}  // namespace

absl::Status exec_debug(Frame& frame, const Op& op) {
  if (op.code == OpCode::kAssert) return exec_assert(frame, op);
  return exec_print(frame, op);
}

}  // namespace monotile::dsl::interp
