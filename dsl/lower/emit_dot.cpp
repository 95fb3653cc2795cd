// dot on the matrix units: operands go through shared memory as 16-bit patterns, each warp loads the
// fragments of its tiles (the unit's fragment maps, data in matrix_unit.cpp) and issues the vendor's
// instruction; the accumulator stays in registers in the unit's layout. Shapes the unit cannot take
// (below its minimum, not a multiple, f32 operands) use an exact-order FMA loop over shared memory.
#include "absl/strings/str_cat.h"
#include "dsl/lower/op_lowering.h"
#include "support/check.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

std::string half_bits(ScalarType type, const std::string& value) {
  if (type == ScalarType::kBf16) return absl::StrCat("(unsigned short)(__float_as_uint(", value, ") >> 16)");
  return absl::StrCat("mt_f32_to_f16_bits(", value, ")");
}

}  // namespace

absl::Status OpLowering::dot(const Op& op) {
  const Type& a_type = type(op.operands[0]);
  const Type& b_type = type(op.operands[1]);
  int64_t m = a_type.shape[0];
  int64_t k = a_type.shape[1];
  int64_t n = b_type.shape[1];
  ValueId result = op.results[0];
  Layout out_layout = layout_or_default(result);
  if (const StagedDot* staged = pipelines_.staged_dot(&op)) return dot_staged(op, *staged, dot_stage_.at(&op));
  std::optional<MatrixUnit> unit =
      choose_matrix_unit(state_.target, a_type.element.scalar, b_type.element.scalar, m, n, k);
  if (!unit) return dot_fma(op, out_layout);
  ScalarType operand = a_type.element.scalar;
  // A's rows are padded so that their 32-bit words start 4 banks apart (mod 32): the lanes of a
  // fragment load read 8 rows (mma) or 32 (MFMA) at one column, which unpadded rows of k a multiple
  // of 64 elements put in one bank (an 8- or 32-way conflict; most of K2's time before the pad).
  // Where the pad alone would overflow the target's shared memory, the rows stay unpadded.
  auto operand_bytes = [&](int64_t stride) { return (m * stride * 2 + 15) / 16 * 16 + k * n * 2; };
  int64_t a_stride = k % 16 == 0 ? k + 8 : k;
  if (operand_bytes(a_stride) > state_.target.shared_memory_per_block()) a_stride = k;
  int64_t b_offset = (m * a_stride * 2 + 15) / 16 * 16;
  need_smem(b_offset + k * n * 2);
  std::string a_smem = smem("unsigned short");
  std::string a_words = smem("unsigned");
  std::string b_smem = smem("unsigned short", b_offset);
  // Every operand is in its registers before shared memory is written (a conversion uses it too).
  std::vector<Layout> layouts = {layout_or_default(op.operands[0]), layout_or_default(op.operands[1])};
  std::vector<std::string> sources = {get(op.operands[0], layouts[0]), get(op.operands[1], layouts[1])};
  std::string acc = get(op.operands[2], out_layout);
  line(absl::StrCat("// dot [", m, ", ", k, "] x [", k, ", ", n, "] on ", to_absl(unit->shape.instruction)));
  barrier();
  for (int which = 0; which < 2; ++which) {
    ValueId value = op.operands[which];
    const Layout& layout = layouts[which];
    const std::string& src = sources[which];
    std::vector<int64_t> strides = which == 0 ? std::vector<int64_t>{a_stride, 1} : row_major(type(value).shape);
    std::string guard = owner(layout);
    unrolled("i", layout.num_regs());
    line(absl::StrCat(guard.empty() ? "" : absl::StrCat("if (", guard, ") "), which == 0 ? a_smem : b_smem, "[",
                      linear(layout, "i", strides), "] = ", half_bits(operand, absl::StrCat(src, "[i]")), ";"));
    close();
  }
  barrier();
  std::string out = name(result);
  declare(result, out_layout.num_regs());
  copy_into(out, acc, out_layout.num_regs());
  const DimLayout& rows = out_layout.dim(0);
  const DimLayout& cols = out_layout.dim(1);
  int64_t tiles_m = m / (unit->shape.m * rows.wpb);
  int64_t tiles_n = n / (unit->shape.n * cols.wpb);
  MT_CHECK(tiles_m * unit->shape.m * rows.wpb == m && tiles_n * unit->shape.n * cols.wpb == n,
           "the accumulator's warps must split its tiles evenly");
  int64_t row_stride = out_layout.reg_stride(0);
  open("");
  line("const int lane = mt_lane;");
  line(absl::StrCat("const int mt_wr = ", rows.wpb == 1 ? "0" : absl::StrCat("(mt_warp / ", rows.warp_stride, ") % ", rows.wpb), ";"));
  line(absl::StrCat("const int mt_wc = ", cols.wpb == 1 ? "0" : absl::StrCat("(mt_warp / ", cols.warp_stride, ") % ", cols.wpb), ";"));
  open(absl::StrCat("for (int kk = 0; kk < ", k / unit->shape.k, "; ++kk)"));
  line(absl::StrCat("unsigned short mt_b[", tiles_n, "][", unit->b_elems, "];"));
  unrolled("j", tiles_n);
  unrolled("e", unit->b_elems);
  line(absl::StrCat("const int c = ", to_absl(unit->b_col), ";"));
  line(absl::StrCat("const int kc = j * ", unit->col_regs, " + ", to_absl(unit->col_reg), ";"));
  line(absl::StrCat("const int col = (mt_wc * ", cols.tpw, " + ", to_absl(unit->col_lane), ") * ", cols.spt, " + kc % ",
                    cols.spt, " + (kc / ", cols.spt, ") * ", cols.cover(), ";"));
  line(absl::StrCat("mt_b[j][e] = ", b_smem, "[(kk * ", unit->shape.k, " + ", to_absl(unit->b_k), ") * ", n, " + col];"));
  close();
  close();
  unrolled("i", tiles_m);
  line(absl::StrCat("unsigned short mt_a[", unit->a_elems, "];"));
  // A's elements 2p and 2p + 1 are neighbours along K in one row (matrix_unit.h): one 32-bit load.
  MT_CHECK(unit->a_elems % 2 == 0, "A fragments hold element pairs");
  unrolled("p", unit->a_elems / 2);
  line("const int e = 2 * p;");
  line(absl::StrCat("const int rho = ", to_absl(unit->a_row), ";"));
  line(absl::StrCat("const int kr = i * ", unit->row_regs, " + ", to_absl(unit->row_reg), ";"));
  line(absl::StrCat("const int row = (mt_wr * ", rows.tpw, " + ", to_absl(unit->row_lane), ") * ", rows.spt, " + kr % ",
                    rows.spt, " + (kr / ", rows.spt, ") * ", rows.cover(), ";"));
  line(absl::StrCat("const unsigned mt_pair = ", a_words, "[(row * ", a_stride, " + kk * ", unit->shape.k, " + ",
                    to_absl(unit->a_k), ") / 2];"));
  line("mt_a[e] = (unsigned short)(mt_pair & 0xffffu);");
  line("mt_a[e + 1] = (unsigned short)(mt_pair >> 16);");
  close();
  unrolled("j", tiles_n);
  line(absl::StrCat("float mt_c[", unit->c_elems, "];"));
  std::string reg = absl::StrCat("(i * ", unit->row_regs, " + ", to_absl(unit->c_row_reg), ") * ", row_stride, " + j * ",
                                 unit->col_regs, " + ", to_absl(unit->c_col_reg));
  unrolled("e", unit->c_elems);
  line(absl::StrCat("mt_c[e] = ", out, "[", reg, "];"));
  close();
  line(spelling_.matrix_multiply(*unit, "mt_a", "mt_b[j]", "mt_c"));
  unrolled("e", unit->c_elems);
  line(absl::StrCat(out, "[", reg, "] = mt_c[e];"));
  close();
  close();
  close();
  close();
  close();
  return absl::OkStatus();
}

absl::Status OpLowering::dot_fma(const Op& op, const Layout& out_layout) {
  const Type& a_type = type(op.operands[0]);
  const Type& b_type = type(op.operands[1]);
  if (!is_float(a_type.element.scalar) || a_type.element.scalar == ScalarType::kF64 ||
      a_type.element.scalar != b_type.element.scalar) {
    return unsupported(op, absl::StrCat("takes f16, bf16 or f32 operands of one type, got ", a_type.str(), " and ",
                                        b_type.str()));
  }
  int64_t m = a_type.shape[0];
  int64_t k = a_type.shape[1];
  int64_t n = b_type.shape[1];
  int64_t b_offset = (m * k * 4 + 15) / 16 * 16;
  need_smem(b_offset + k * n * 4);
  std::vector<Layout> layouts = {layout_or_default(op.operands[0]), layout_or_default(op.operands[1])};
  std::vector<std::string> sources = {get(op.operands[0], layouts[0]), get(op.operands[1], layouts[1])};
  std::string acc = get(op.operands[2], out_layout);
  line(absl::StrCat("// dot [", m, ", ", k, "] x [", k, ", ", n, "] with FMA (no matrix unit for this shape/type)"));
  barrier();
  for (int which = 0; which < 2; ++which) {
    ValueId value = op.operands[which];
    const Layout& layout = layouts[which];
    const std::string& src = sources[which];
    std::vector<int64_t> strides = row_major(type(value).shape);
    std::string guard = owner(layout);
    unrolled("i", layout.num_regs());
    line(absl::StrCat(guard.empty() ? "" : absl::StrCat("if (", guard, ") "), smem("float", which == 0 ? 0 : b_offset),
                      "[", linear(layout, "i", strides), "] = ", src, "[i];"));
    close();
  }
  barrier();
  std::string out = name(op.results[0]);
  declare(op.results[0], out_layout.num_regs());
  unrolled("i", out_layout.num_regs());
  line(absl::StrCat("const int row = ", coord(out_layout, 0, "i"), ";"));
  line(absl::StrCat("const int col = ", coord(out_layout, 1, "i"), ";"));
  line(absl::StrCat("float mt_s = ", acc, "[i];"));
  // Unrolled in part only: unrolled whole, a short K pulls every operand of every register's sum
  // into registers at once (hiprtc spilled K2's MXFP4 steps at K 64 on gfx90a).
  line("#pragma unroll 8");
  line(absl::StrCat("for (int kk = 0; kk < ", k, "; ++kk) mt_s = fmaf(", smem("float"), "[row * ", k, " + kk], ",
                    smem("float", b_offset), "[kk * ", n, " + col], mt_s);"));
  line(absl::StrCat(out, "[i] = mt_s;"));
  close();
  return absl::OkStatus();
}

}  // namespace monotile::dsl::lower
