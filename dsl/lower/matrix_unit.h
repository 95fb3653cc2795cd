// The matrix units `dot` lowers to, as data: per instruction, which lane holds which fragment element
// (device expressions in `lane` and `e`) and the accumulator's distributed layout. One emitter walks
// these for every vendor; only the instruction's spelling lives in the vendor tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "dsl/ir.h"
#include "dsl/lower/layout.h"
#include "dsl/target.h"

namespace monotile::dsl::lower {

struct MatrixUnit {
  MatrixShape shape;  // m, n, k, operand type, instruction (as in Target::matrix_shapes())
  int a_elems = 0;    // A elements per lane per instruction
  int b_elems = 0;
  int c_elems = 0;
  // Fragment element e of lane `lane`: A at (row rho, column kk), B at (row kk, column c), C at (rho, c).
  // Every unit's A elements 2p and 2p + 1 sit in one row at neighbouring columns (the dot reads them
  // as one 32-bit word).
  std::string_view a_row, a_k, b_k, b_col, c_row, c_col;
  // Where tile row rho sits in the accumulator layout: its lane bits (along the row dim) and its
  // register among the tile's rows; the same for tile column c. Expressions in `rho` / `c`.
  std::string_view row_lane, row_reg, col_lane, col_reg;
  // C element e's register within the tile: row register and column register.
  std::string_view c_row_reg, c_col_reg;
  // The accumulator's per-dim spread inside one instruction tile.
  int row_spt = 1, row_tpw = 1, row_lane_stride = 0, row_regs = 1;
  int col_spt = 1, col_tpw = 1, col_lane_stride = 0, col_regs = 1;
  // Operands read straight from registers (emit_dot.cpp): A's tile rows sit on a_row_tpw lanes (lane
  // stride a_row_lane_stride), B's tile columns on b_col_tpw lanes, and K on k_tpw lanes (stride
  // k_lane_stride) of both. A lane supplies k / k_tpw K slots per instruction; A's fragment element
  // e is the tile's row rep a_row_rep and the lane's K slot a_k_slot, B's element e its K slot
  // b_k_slot (expressions in `e`). Which logical K a slot carries is the lowering's choice, the same
  // in A and B, so that the instruction's sum runs over K in any order.
  int a_row_tpw = 1, a_row_lane_stride = 0, b_col_tpw = 1, b_col_lane_stride = 0, k_tpw = 1, k_lane_stride = 0;
  std::string_view a_row_rep, a_k_slot, b_k_slot;
};

// The matrix unit for a dot of a [M, K] x b [K, N] on `target`, or nullopt when the operands are not
// f16/bf16 of one type, a dim is not a multiple of the unit's, or the target has no unit we drive
// (then the dot takes the FMA path).
std::optional<MatrixUnit> choose_matrix_unit(const Target& target, ScalarType a, ScalarType b,
                                             int64_t m, int64_t n, int64_t k);

// The accumulator layout of `unit` for an [m, n] result spread over `num_warps` warps; with
// `warps_along_m` every warp takes its own rows (the warpgroup MMA's split: warp w of a warpgroup
// holds rows 16 w .. 16 w + 15 of each 64-row instruction, in mma m16n8k16's fragment order).
Layout accumulator_layout(const MatrixUnit& unit, int64_t m, int64_t n, int warp_size, int num_warps,
                          bool warps_along_m = false);

// The layout in which a dot's operand (`which` 0: A [m, k], 1: B [k, n]) feeds `unit`'s fragments from
// registers, given the dot's accumulator layout: K spread over the unit's K lanes in runs of `run`
// consecutive elements a lane (a multiple of 16 bytes of the loaded data keeps loads vectorized),
// rows (A) or columns (B) on the unit's lanes and the accumulator's warps. nullopt when the
// accumulator's warps interleave tiles in a way no operand layout follows, or `run` does not divide K.
std::optional<Layout> fragment_layout(const MatrixUnit& unit, int which, int64_t k, const Layout& accumulator, int run);

// Whether a dot of a [M, K] x b [K, N] in a program with `options` runs on sm_90a's warpgroup MMA
// (wgmma) when both operands are staged K-contiguous (pipeline.h): the target has it, the program
// asks for it (or leaves the choice to the lowering and N >= 128), num_warps is a multiple of 4, M a multiple of 16 num_warps (each warp owns 16 rows
// of every 64-row instruction), N a multiple of 8 up to 256, K 64 (rows of 128 bytes, the unit's
// 128-byte swizzle), bf16 or f16 operands.
// Its accumulator then takes accumulator_layout(..., warps_along_m = true) whether staged or not.
bool warpgroup_mma_fits(const Target& target, const KernelOptions& options, ScalarType a, ScalarType b, int64_t m,
                        int64_t n, int64_t k);

}  // namespace monotile::dsl::lower
