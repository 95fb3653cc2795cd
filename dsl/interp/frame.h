// The state of one running program instance: its values (one Tile per ValueId, reused across loop
// iterations and instances), its program ids, the buffer each pointer argument points into, and
// what all instances of a launch share (memory map, options, the cancellation flag). Each instance
// runs on one host thread.
#pragma once

#include <array>
#include <atomic>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "dsl/interp/interpreter.h"
#include "dsl/interp/memory_map.h"
#include "dsl/interp/tile.h"
#include "dsl/ir.h"

namespace monotile::dsl::interp {

// Shared by every instance of every launch running together.
struct SharedState {
  const MemoryMap* memory = nullptr;
  const InterpretOptions* options = nullptr;
  bool concurrent = false;                // instances run on threads: plain accesses go through atomics
  std::atomic<bool> cancelled{false};     // set when an instance fails; loops and waits stop
  std::mutex output_mutex;                // serializes prints and timeout reports
};

struct Frame {
  const Program* program = nullptr;
  SharedState* shared = nullptr;
  std::array<int, 3> program_id{0, 0, 0};
  std::array<int, 3> num_programs{1, 1, 1};
  std::vector<Tile> values;
  // Per parameter: the allocation a pointer argument points into (a provenance's origin indexes
  // this); null for scalars and for pointers outside every allocation.
  std::span<const Buffer* const> argument_buffers;

  const Type& type(ValueId id) const { return program->value_types[static_cast<size_t>(id)]; }
  Tile& value(ValueId id) { return values[static_cast<size_t>(id)]; }
  // The result tile of `op` (index `i`), sized for its type.
  Tile& result(const Op& op, size_t i = 0) {
    Tile& tile = values[static_cast<size_t>(op.results[i])];
    tile.reset(type(op.results[i]));
    return tile;
  }
  const Tile& operand(const Op& op, size_t i) { return values[static_cast<size_t>(op.operands[i])]; }
  const Type& operand_type(const Op& op, size_t i) const { return type(op.operands[i]); }
  const Type& result_type(const Op& op, size_t i = 0) const { return type(op.results[i]); }
};

// "load at k.cpp:12 in \"kernel\" instance (1, 0, 0): <what>": the prefix of every run-time error.
std::string op_context(const Frame& frame, const Op& op);
absl::Status op_error(const Frame& frame, const Op& op, std::string_view what);
// The status a loop or wait returns when another instance already failed.
absl::Status cancelled_error(const Frame& frame, const Op& op);

}  // namespace monotile::dsl::interp
