// Software pipelining of matrix-unit operands (analysis): which loads inside a `for` body feed only a
// dot (directly, or through a 2-D trans), with the loaded tile's last dim contiguous and 16-byte
// aligned (a mask constant over 16 bytes, no `other`), so that they can be copied global -> shared asynchronously a few iterations ahead
// instead of passing through registers. Only targets whose spelling stages operands get a plan; the
// emission is in emit_dot_staged_cuda.cpp. The program's meaning is unchanged: the same elements are read.
#pragma once

#include <cstdint>
#include <vector>

#include "dsl/ir.h"
#include "dsl/lower/lowering_state.h"

namespace monotile::dsl::lower {

// One dot operand staged in shared memory as its loaded tile [rows, cols] (cols contiguous): A as
// [M, K] or [K, M], B as [N, K] or [K, N]. When cols is not K (`k_rows`) fragments are read transposed.
struct StagedOperand {
  const Op* load = nullptr;
  const Op* trans = nullptr;  // set when the dot takes trans(load)
  int64_t rows = 0;
  int64_t cols = 0;
  bool k_rows = false;  // rows are K
  // The load's mask when it is not known true: constant over each 16-byte unit, so a unit is copied
  // whole or zero-filled (the load has no `other`: masked lanes read as zero).
  ValueId mask = kNoValue;
  int64_t offset = 0;  // bytes from the start of a stage
};

struct StagedDot {
  const Op* dot = nullptr;
  StagedOperand a;  // [M, K]
  StagedOperand b;  // [N, K]
  // On the warpgroup MMA (matrix_unit.h warpgroup_mma_fits, both operands K-contiguous in 128-byte
  // rows): the unit reads the stage itself through matrix descriptors, so A's rows are stored in
  // the order its instructions take them (emit_dot_staged_cuda.cpp) and the stage is 1024-byte aligned.
  bool warpgroup = false;
};

// A load the program asked to stage (AccessOptions::stages) that qualifies: its tile [rows, cols]
// (cols contiguous, rows of a multiple of 16 bytes) copied into the stage in 16-byte units, then
// read from there, where the load stands, into the registers of the load's own layout.
struct StagedLoad {
  const Op* load = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int bytes = 0;  // an element's
  ValueId mask = kNoValue;  // as StagedOperand's
  int64_t offset = 0;
};

struct PipelinedLoop {
  const Op* loop = nullptr;
  std::vector<StagedDot> dots;
  std::vector<StagedLoad> loads;
  // Ops of the body the staged loads' pointers depend on, in program order: re-emitted with the
  // loop index of an iteration ahead. Pure ops only (no memory, no carried values).
  std::vector<const Op*> slice;
  // The program's num_stages (0: 4) with dots; the most its staged loads ask for when more.
  int stages = 0;
  int64_t stage_bytes = 0;
  // The iterations whose copies are in flight at the top of an iteration: stages - 1, or stages - 2
  // when the loop's warpgroup MMAs run on into the next iteration (`mma_in_flight`: one dot, on the
  // warpgroup MMA, the program did not ask for kWarpgroupSerial, three stages or more, its
  // accumulator carried from one iteration to the next and used by nothing else), whose copies then
  // must not refill the stage those MMAs still read.
  int ahead = 0;
  bool mma_in_flight = false;
  // Every stage and operand starts at a multiple of this; above 128 (a warpgroup dot's 128-byte
  // swizzle atoms, which the hardware swizzles by absolute address) the stages' base is rounded up
  // at run time inside `align` extra bytes.
  int64_t align = 128;
};

struct PipelinePlan {
  std::vector<PipelinedLoop> loops;

  const PipelinedLoop* loop_of(const Op* for_op) const;
  const StagedDot* staged_dot(const Op* dot) const;
  const StagedLoad* staged_load(const Op* load) const;
  // A load or trans whose value the pipeline moves instead (it emits nothing itself; a staged load
  // still reads its registers from the stage).
  bool is_staged(const Op* op) const;
};

// The plan for the program in `state` (layouts and axis analysis done). Loops whose stages would
// not fit beside `reserve_bytes` of other shared memory are left alone.
PipelinePlan plan_pipelines(const LoweringState& state, int64_t reserve_bytes = 16 * 1024);

}  // namespace monotile::dsl::lower
