// Fragment maps of mma.sync m16n8k16 (PTX ISA, "Matrix Fragments for mma.m16n8k16") and of CDNA2/3
// MFMA 32x32x8 / 16x16x16 (AMD matrix instruction calculator), written as data; the warpgroup MMA's
// accumulator is m16n8k16's per warp, so it takes the same unit with every warp along M.
#include "dsl/lower/matrix_unit.h"

#include <vector>

#include "support/check.h"

namespace monotile::dsl::lower {
namespace {

MatrixUnit mma_m16n8k16(const MatrixShape& shape) {
  MatrixUnit unit;
  unit.shape = shape;
  unit.a_elems = 8;
  unit.b_elems = 4;
  unit.c_elems = 4;
  // groupID = lane >> 2, thread-in-group = lane & 3.
  unit.a_row = "((lane >> 2) + 8 * ((e >> 1) & 1))";
  unit.a_k = "(2 * (lane & 3) + (e & 1) + 8 * (e >> 2))";
  unit.b_k = "(2 * (lane & 3) + (e & 1) + 8 * (e >> 1))";
  unit.b_col = "(lane >> 2)";
  unit.c_row = "((lane >> 2) + 8 * (e >> 1))";
  unit.c_col = "(2 * (lane & 3) + (e & 1))";
  unit.row_lane = "(rho & 7)";
  unit.row_reg = "(rho >> 3)";
  unit.col_lane = "(c >> 1)";
  unit.col_reg = "(c & 1)";
  unit.c_row_reg = "(e >> 1)";
  unit.c_col_reg = "(e & 1)";
  unit.row_spt = 1, unit.row_tpw = 8, unit.row_lane_stride = 4, unit.row_regs = 2;
  unit.col_spt = 2, unit.col_tpw = 4, unit.col_lane_stride = 1, unit.col_regs = 2;
  unit.a_row_tpw = 8, unit.a_row_lane_stride = 4, unit.b_col_tpw = 8, unit.b_col_lane_stride = 4;
  unit.k_tpw = 4, unit.k_lane_stride = 1;
  // A's element e is K 2 (lane & 3) + (e & 1) + 8 (e >> 2) (a_k), B's 2 (lane & 3) + (e & 1) + 8 (e >> 1)
  // (b_k): one K, one slot (its bit 0, and 2 for its bit 3).
  unit.a_row_rep = "((e >> 1) & 1)";
  unit.a_k_slot = "((e & 1) + 2 * (e >> 2))";
  unit.b_k_slot = "((e & 1) + 2 * (e >> 1))";
  return unit;
}

MatrixUnit mfma_32x32x8(const MatrixShape& shape) {
  MatrixUnit unit;
  unit.shape = shape;
  unit.a_elems = 4;
  unit.b_elems = 4;
  unit.c_elems = 16;
  unit.a_row = "(lane & 31)";
  unit.a_k = "((lane >> 5) * 4 + e)";
  unit.b_k = "((lane >> 5) * 4 + e)";
  unit.b_col = "(lane & 31)";
  unit.c_row = "(8 * (e >> 2) + 4 * (lane >> 5) + (e & 3))";
  unit.c_col = "(lane & 31)";
  unit.row_lane = "((rho >> 2) & 1)";
  unit.row_reg = "((rho & 3) + 4 * (rho >> 3))";
  unit.col_lane = "(c)";
  unit.col_reg = "(0)";
  unit.c_row_reg = "(e)";
  unit.c_col_reg = "(0)";
  unit.row_spt = 4, unit.row_tpw = 2, unit.row_lane_stride = 32, unit.row_regs = 16;
  unit.col_spt = 1, unit.col_tpw = 32, unit.col_lane_stride = 1, unit.col_regs = 1;
  unit.a_row_tpw = 32, unit.a_row_lane_stride = 1, unit.b_col_tpw = 32, unit.b_col_lane_stride = 1;
  unit.k_tpw = 2, unit.k_lane_stride = 32;
  unit.a_row_rep = "(0)";
  unit.a_k_slot = "(e)";
  unit.b_k_slot = "(e)";
  return unit;
}

MatrixUnit mfma_16x16x16(const MatrixShape& shape) {
  MatrixUnit unit;
  unit.shape = shape;
  unit.a_elems = 4;
  unit.b_elems = 4;
  unit.c_elems = 4;
  unit.a_row = "(lane & 15)";
  unit.a_k = "((lane >> 4) * 4 + e)";
  unit.b_k = "((lane >> 4) * 4 + e)";
  unit.b_col = "(lane & 15)";
  unit.c_row = "(4 * (lane >> 4) + e)";
  unit.c_col = "(lane & 15)";
  unit.row_lane = "(rho >> 2)";
  unit.row_reg = "(rho & 3)";
  unit.col_lane = "(c)";
  unit.col_reg = "(0)";
  unit.c_row_reg = "(e)";
  unit.c_col_reg = "(0)";
  unit.row_spt = 4, unit.row_tpw = 4, unit.row_lane_stride = 16, unit.row_regs = 4;
  unit.col_spt = 1, unit.col_tpw = 16, unit.col_lane_stride = 1, unit.col_regs = 1;
  unit.a_row_tpw = 16, unit.a_row_lane_stride = 1, unit.b_col_tpw = 16, unit.b_col_lane_stride = 1;
  unit.k_tpw = 4, unit.k_lane_stride = 16;
  unit.a_row_rep = "(0)";
  unit.a_k_slot = "(e)";
  unit.b_k_slot = "(e)";
  return unit;
}

std::optional<MatrixUnit> describe(const Target& target, const MatrixShape& shape) {
  if (target.vendor() == Vendor::kNvidia && shape.m == 16 && shape.n == 8 && shape.k == 16) {
    return mma_m16n8k16(shape);
  }
  if (target.vendor() == Vendor::kAmd && target.warp_size() == 64) {
    bool bf16_ok = shape.operand == MatrixOperand::kF16 || shape.instruction.ends_with("_1k");
    if (bf16_ok && shape.m == 32 && shape.n == 32 && shape.k == 8) return mfma_32x32x8(shape);
    if (bf16_ok && shape.m == 16 && shape.n == 16 && shape.k == 16) return mfma_16x16x16(shape);
  }
  return std::nullopt;
}

}  // namespace

std::optional<MatrixUnit> choose_matrix_unit(const Target& target, ScalarType a, ScalarType b,
                                             int64_t m, int64_t n, int64_t k) {
  if (a != b || (a != ScalarType::kBf16 && a != ScalarType::kF16)) return std::nullopt;
  MatrixOperand operand = a == ScalarType::kBf16 ? MatrixOperand::kBf16 : MatrixOperand::kF16;
  for (const MatrixShape& shape : target.matrix_shapes()) {
    if (shape.operand != operand || m % shape.m != 0 || n % shape.n != 0 || k % shape.k != 0) continue;
    if (std::optional<MatrixUnit> unit = describe(target, shape)) return unit;
  }
  return std::nullopt;
}

std::optional<Layout> fragment_layout(const MatrixUnit& unit, int which, int64_t k, const Layout& accumulator,
                                     int run) {
  const DimLayout& acc = accumulator.dim(which == 0 ? 0 : 1);
  const int lanes = which == 0 ? unit.a_row_tpw : unit.b_col_tpw;
  const int lane_stride = which == 0 ? unit.a_row_lane_stride : unit.b_col_lane_stride;
  // Tile t of a warp must be the operand's reps [t * reps, (t + 1) * reps) of that warp: true when
  // the accumulator spreads a tile's rows (columns) over exactly the operand's lanes, or uses one warp
  // along that dim (a tile is then a contiguous span). MFMA 32x32's accumulator over several warps
  // interleaves rows 8 at a time, which an operand's 32 row lanes cannot follow.
  if (acc.spt * acc.tpw != lanes && acc.wpb != 1) return std::nullopt;
  if (run < 1 || k % (int64_t{run} * unit.k_tpw) != 0) return std::nullopt;
  DimLayout spread{acc.size, 1, lanes, lane_stride, acc.wpb, acc.warp_stride};
  DimLayout along_k{k, run, unit.k_tpw, unit.k_lane_stride, 1, 0};
  std::vector<DimLayout> dims = which == 0 ? std::vector{spread, along_k} : std::vector{along_k, spread};
  return Layout::make(std::move(dims), accumulator.warp_size(), accumulator.num_warps());
}

bool warpgroup_mma_fits(const Target& target, const KernelOptions& options, ScalarType a, ScalarType b, int64_t m,
                        int64_t n, int64_t k) {
  if (!target.has_wgmma() || options.mma == MmaKind::kWarp) return false;
  // By default only where measured faster (the 4096^3 GEMM's 128- and 256-wide tiles, docs/perf.md):
  // narrower dots (the GEMV's, N = 8..64) keep mma.sync until measured.
  if (options.mma == MmaKind::kAuto && n < 128) return false;
  if (a != b || (a != ScalarType::kBf16 && a != ScalarType::kF16)) return false;
  return options.num_warps % 4 == 0 && m % (16 * options.num_warps) == 0 && n % 8 == 0 && n <= 256 && k == 64;
}

Layout accumulator_layout(const MatrixUnit& unit, int64_t m, int64_t n, int warp_size, int num_warps,
                          bool warps_along_m) {
  int64_t m_tiles = m / unit.shape.m;
  int64_t n_tiles = n / unit.shape.n;
  int warps_m = 1;
  int warps_n = 1;
  if (warps_along_m) {
    MT_CHECK(m % (int64_t{unit.shape.m} * num_warps) == 0, "every warp needs its own rows");
    warps_m = num_warps;
  }
  // A dimension is split over twice the warps only while its tiles divide evenly: the emitters give
  // each warp tiles / warps of them, so 3 tiles over 2 warps would leave the third uncomputed. The
  // warps left over hold copies.
  while (warps_m * warps_n < num_warps) {
    int64_t left_m = m_tiles / warps_m;
    int64_t left_n = n_tiles / warps_n;
    if (left_m >= left_n && left_m % 2 == 0) {
      warps_m *= 2;
    } else if (left_n % 2 == 0) {
      warps_n *= 2;
    } else if (left_m % 2 == 0) {
      warps_m *= 2;
    } else {
      break;
    }
  }
  std::vector<DimLayout> dims(2);
  dims[0] = DimLayout{m, unit.row_spt, unit.row_tpw, unit.row_lane_stride, warps_m, 1};
  dims[1] = DimLayout{n, unit.col_spt, unit.col_tpw, unit.col_lane_stride, warps_n, warps_m};
  return Layout::make(std::move(dims), warp_size, num_warps);
}

}  // namespace monotile::dsl::lower
