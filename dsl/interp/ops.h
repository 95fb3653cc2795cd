// The interpreter's op families, one file each, and the block runner that dispatches to them. Each
// function executes one op of its family on whole tiles in `frame` and writes its results.
#pragma once

#include <span>
#include <vector>

#include "absl/status/status.h"
#include "dsl/interp/frame.h"

namespace monotile::dsl::interp {

// Runs `block`'s ops in order up to its end or its kYield (then pointed to by `yield`, else null).
absl::Status run_block(Frame& frame, const Block& block, const Op** yield);
// Binds `args` to the block's arguments, runs it, and copies the yielded tiles into `results`.
absl::Status run_region(Frame& frame, const Block& block, std::span<const Tile* const> args,
                        std::vector<Tile>& results);

absl::Status exec_op(Frame& frame, const Op& op);

// Checks that every selected lane (mask null: all) of `pointers`, each an access of the pointee's
// size, is aligned and inside the allocation of the argument it was derived from (a lane without a
// provenance: inside any allocation); else an error naming the op, the instance, the lane, the
// buffer and the offset. `verb`: "reads".
absl::Status check_access(Frame& frame, const Op& op, const Type& pointer_type,
                          const Tile& pointers, const int64_t* mask, std::string_view verb);
absl::Status exec_shape(Frame& frame, const Op& op);        // shape_ops.cpp: creation and shape ops
absl::Status exec_elementwise(Frame& frame, const Op& op);  // elementwise.cpp: arithmetic, math, select
absl::Status exec_convert(Frame& frame, const Op& op);      // convert.cpp: cast, bitcast, addptr, mxfp4
absl::Status exec_memory(Frame& frame, const Op& op);       // memory.cpp: load, store, prefetch
absl::Status exec_sync(Frame& frame, const Op& op);         // atomics.cpp: atomics, fence, timer, wait
absl::Status exec_reduction(Frame& frame, const Op& op);    // reduce.cpp: reduce, arg reduce, scan
absl::Status exec_sort(Frame& frame, const Op& op);         // sort.cpp: sort, topk
absl::Status exec_dot(Frame& frame, const Op& op);          // dot.cpp
absl::Status exec_control(Frame& frame, const Op& op);      // control.cpp: for, if, while
absl::Status exec_debug(Frame& frame, const Op& op);        // debug_ops.cpp: assert, print

}  // namespace monotile::dsl::interp
