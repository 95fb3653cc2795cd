// Pipelined dots (plan in pipeline.h): the staged loads of a `for` body are issued as asynchronous
// 16-byte global -> shared copies `stages - 1` iterations ahead (a prologue fills the first stages),
// and the dot reads its fragments from the stage with matrix loads. Invariant: at the top of
// iteration t, after the wait and the barrier, stage t % stages holds iteration t's tiles and no
// thread still reads stage (t - 1) % stages, which the copies for iteration t + stages - 1 refill.
// Tiles are XOR-swizzled in 16-byte units so that the 8 rows a matrix load reads hit distinct banks.
#include "absl/strings/str_cat.h"
#include "dsl/lower/op_lowering.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

// The 16-byte unit holding row `r`, unit column `c` of a tile with `units` 16-byte units per row.
// Eight consecutive rows at one unit column land in eight distinct units of a 128-byte line span.
std::string swizzled_unit(const std::string& r, const std::string& c, int64_t units) {
  if (units % 8 == 0) {
    return absl::StrCat("((", r, ") * ", units, " + (((", c, ") & ~7) | (((", c, ") ^ (", r, ")) & 7)))");
  }
  if (units == 2 || units == 4) {
    int64_t rows_per_line = 8 / units;
    return absl::StrCat("(((", r, ") / ", rows_per_line, ") * 8 + ((((", r, ") % ", rows_per_line, ") * ", units,
                        " + (", c, ")) ^ (((", r, ") / ", rows_per_line, ") & 7)))");
  }
  return absl::StrCat("((", r, ") * ", units, " + (", c, "))");
}

std::string in_range(const std::string& index, const std::string& hi, const std::string& step) {
  return absl::StrCat("(", step, " > 0 ? ", index, " < ", hi, " : ", index, " > ", hi, ")");
}

}  // namespace

absl::Status OpLowering::stage_copies(const PipelinedLoop& loop, const std::string& index,
                                      const std::string& stage) {
  const Block& body = loop.loop->regions.at(0);
  open("");
  // The index of the iteration ahead shadows the loop's; the pointers' ops are re-emitted in a scope
  // of their own, so nothing computed for the current iteration is reused.
  line(absl::StrCat(reg_type(body.args[0]), " ", name(body.args[0]), "[1] = {", index, "};"));
  auto saved = std::move(scopes_);
  scopes_.clear();
  push_scope();
  absl::Status status = absl::OkStatus();
  for (const Op* op : loop.slice) {
    status = this->op(*op);
    if (!status.ok()) break;
  }
  for (const StagedDot& dot : loop.dots) {
    if (!status.ok()) break;
    for (const StagedOperand* operand : {&dot.a, &dot.b}) {
      Layout layout = Layout::blocked({operand->rows, operand->cols}, 8, state_.target.warp_size(),
                                      state_.program.options.num_warps);
      std::string ptrs = get(operand->load->operands[0], layout);
      std::string mask = operand->mask == kNoValue ? "" : get(operand->mask, layout);
      std::string guard = owner(layout);
      unrolled("g", layout.num_regs() / 8);
      line(absl::StrCat("const int r = ", coord(layout, 0, "g * 8"), ";"));
      line(absl::StrCat("const int c = ", coord(layout, 1, "g * 8"), " / 8;"));
      std::string dst = absl::StrCat(stage, " + ", operand->offset, " + ", swizzled_unit("r", "c", operand->cols / 8),
                                     " * 16");
      line(absl::StrCat(guard.empty() ? "" : absl::StrCat("if (", guard, ") "),
                        mask.empty() ? absl::StrCat("mt_cp_async16(", dst, ", ", ptrs, "[g * 8]);")
                                     : absl::StrCat("mt_cp_async16_zfill(", dst, ", ", ptrs, "[g * 8], ", mask,
                                                    "[g * 8]);")));
      close();
    }
  }
  scopes_ = std::move(saved);
  close();
  return status;
}

absl::Status OpLowering::pipeline_prologue(const Op& op, const PipelinedLoop& loop, LoopPipeline& state) {
  pipe_bytes_ = std::max<int64_t>(pipe_bytes_, loop.stages * loop.stage_bytes);
  std::string lo = name(op.operands[0]) + "[0]";
  std::string hi = name(op.operands[1]) + "[0]";
  std::string step = name(op.operands[2]) + "[0]";
  state.base = fresh("stages");
  state.read = fresh("stage_read");
  state.write = fresh("stage_write");
  line(absl::StrCat("// ", loop.dots.size(), " dot(s) pipelined over ", loop.stages, " stages of ", loop.stage_bytes,
                    " bytes"));
  line(absl::StrCat("const unsigned ", state.base, " = mt_shared_u32(mt_smem + mt_pipe_offset);"));
  barrier();  // an earlier run of this loop may still read the stages
  for (int s = 0; s + 1 < loop.stages; ++s) {
    std::string index = absl::StrCat("(", lo, " + ", s, " * ", step, ")");
    open(absl::StrCat("if ", in_range(index, hi, step)));
    MT_RETURN_IF_ERROR(stage_copies(loop, index, absl::StrCat(state.base, " + ", s * loop.stage_bytes)));
    close();
    line("mt_cp_async_commit();");
  }
  line(absl::StrCat("unsigned ", state.read, " = ", state.base, ";"));
  line(absl::StrCat("unsigned ", state.write, " = ", state.base, " + ", (loop.stages - 1) * loop.stage_bytes, ";"));
  return absl::OkStatus();
}

absl::Status OpLowering::pipeline_top(const Op& op, const PipelinedLoop& loop, const LoopPipeline& state,
                                      const std::string& index) {
  std::string hi = name(op.operands[1]) + "[0]";
  std::string step = name(op.operands[2]) + "[0]";
  line(absl::StrCat("mt_cp_async_wait<", loop.stages - 2, ">();"));
  barrier();
  std::string ahead = absl::StrCat("(", index, " + ", loop.stages - 1, " * ", step, ")");
  open(absl::StrCat("if ", in_range(ahead, hi, step)));
  MT_RETURN_IF_ERROR(stage_copies(loop, ahead, state.write));
  close();
  line("mt_cp_async_commit();");
  return absl::OkStatus();
}

void OpLowering::pipeline_advance(const PipelinedLoop& loop, const LoopPipeline& state) {
  std::string last = absl::StrCat(state.base, " + ", (loop.stages - 1) * loop.stage_bytes);
  for (const std::string& var : {state.read, state.write}) {
    line(absl::StrCat(var, " = ", var, " == ", last, " ? ", state.base, " : ", var, " + ", loop.stage_bytes, ";"));
  }
}

absl::Status OpLowering::dot_staged(const Op& op, const StagedDot& staged, const std::string& stage) {
  const Type& a_type = type(op.operands[0]);
  const Type& b_type = type(op.operands[1]);
  int64_t m = a_type.shape[0];
  int64_t k = a_type.shape[1];
  int64_t n = b_type.shape[1];
  ValueId result = op.results[0];
  Layout out_layout = layout_or_default(result);
  std::optional<MatrixUnit> unit =
      choose_matrix_unit(state_.target, a_type.element.scalar, b_type.element.scalar, m, n, k);
  MT_CHECK(unit && unit->shape.m == 16 && unit->shape.n == 8 && unit->shape.k == 16, "planned for m16n8k16");
  std::string acc = get(op.operands[2], out_layout);
  std::string out = name(result);
  declare(result, out_layout.num_regs());
  copy_into(out, acc, out_layout.num_regs());
  line(absl::StrCat("// dot [", m, ", ", k, "] x [", k, ", ", n, "] on ", to_absl(unit->shape.instruction),
                    ", operands from the pipeline's stage"));
  const DimLayout& rows = out_layout.dim(0);
  const DimLayout& cols = out_layout.dim(1);
  int64_t tiles_m = m / (unit->shape.m * rows.wpb);
  int64_t tiles_n = n / (unit->shape.n * cols.wpb);
  int64_t row_stride = out_layout.reg_stride(0);
  std::string a_base = absl::StrCat("(", stage, " + ", staged.a.offset, ")");
  std::string b_base = absl::StrCat("(", stage, " + ", staged.b.offset, ")");
  open("");
  line(absl::StrCat("const int mt_wr = ", rows.wpb == 1 ? "0" : absl::StrCat("(mt_warp / ", rows.warp_stride, ") % ", rows.wpb), ";"));
  line(absl::StrCat("const int mt_wc = ", cols.wpb == 1 ? "0" : absl::StrCat("(mt_warp / ", cols.warp_stride, ") % ", cols.wpb), ";"));
  // Matrix load x4: lanes 8q..8q+7 give the rows of matrix q.
  line("const int mt_q = mt_lane >> 3;");
  line("const int mt_r8 = mt_lane & 7;");
  unrolled("kk", k / unit->shape.k);
  line(absl::StrCat("unsigned mt_fa[", tiles_m, "][4];"));
  unrolled("i", tiles_m);
  // A's registers: (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15).
  line("const int rho = mt_r8 + 8 * (mt_q & 1);");
  line(absl::StrCat("const int kr = i * ", unit->row_regs, " + ", to_absl(unit->row_reg), ";"));
  line(absl::StrCat("const int row = (mt_wr * ", rows.tpw, " + ", to_absl(unit->row_lane), ") * ", rows.spt, " + kr % ",
                    rows.spt, " + (kr / ", rows.spt, ") * ", rows.cover(), ";"));
  if (!staged.a.k_rows) {
    line(absl::StrCat("mt_ldmatrix_x4(", a_base, " + ", swizzled_unit("row", "kk * 2 + (mt_q >> 1)", staged.a.cols / 8),
                      " * 16, mt_fa[i][0], mt_fa[i][1], mt_fa[i][2], mt_fa[i][3]);"));
  } else {
    // A stored [K, M]: matrix q holds k rows 8 (q >> 1) + 0..7 of m rows 8 (q & 1) + 0..7, transposed.
    line(absl::StrCat("mt_ldmatrix_x4_trans(", a_base, " + ",
                      swizzled_unit("kk * 16 + 8 * (mt_q >> 1) + mt_r8", "(row - mt_r8) / 8", staged.a.cols / 8),
                      " * 16, mt_fa[i][0], mt_fa[i][1], mt_fa[i][2], mt_fa[i][3]);"));
  }
  close();
  line(absl::StrCat("unsigned mt_fb[", tiles_n, "][2];"));
  // B's registers per n-tile: (k 0-7), (k 8-15); one x4 load covers two n-tiles.
  // Stored [N, K]: lane 8q + r gives n row r of the tile at k unit `chunk`. Stored [K, N]: k row
  // 8 chunk + r of the tile's 8 contiguous columns, read transposed.
  auto b_address = [&](std::string_view tile, std::string_view chunk) {
    if (staged.b.k_rows) {
      return absl::StrCat(b_base, " + ",
                          swizzled_unit(absl::StrCat("kk * 16 + 8 * ", to_absl(chunk), " + mt_r8"),
                                        absl::StrCat("mt_col(", to_absl(tile), ", 0) / 8"), staged.b.cols / 8),
                          " * 16");
    }
    return absl::StrCat(b_base, " + ",
                        swizzled_unit(absl::StrCat("mt_col(", to_absl(tile), ", mt_r8)"),
                                      absl::StrCat("kk * 2 + ", to_absl(chunk)), staged.b.cols / 8),
                        " * 16");
  };
  std::string b_load = staged.b.k_rows ? "mt_ldmatrix_x4_trans(" : "mt_ldmatrix_x4(";
  std::string b_load2 = staged.b.k_rows ? "mt_ldmatrix_x2_trans(" : "mt_ldmatrix_x2(";
  line(absl::StrCat("auto mt_col = [&](int j, int c) { const int kc = j * ", unit->col_regs, " + ",
                    to_absl(unit->col_reg), "; return (mt_wc * ", cols.tpw, " + ", to_absl(unit->col_lane), ") * ",
                    cols.spt, " + kc % ", cols.spt, " + (kc / ", cols.spt, ") * ", cols.cover(), "; };"));
  if (tiles_n >= 2) {
    unrolled("jj", tiles_n / 2);
    line(absl::StrCat(b_load, b_address("jj * 2 + (mt_q >> 1)", "(mt_q & 1)"),
                      ", mt_fb[jj * 2][0], mt_fb[jj * 2][1], mt_fb[jj * 2 + 1][0], mt_fb[jj * 2 + 1][1]);"));
    close();
  }
  if (tiles_n % 2 == 1) {
    line(absl::StrCat(b_load2, b_address(std::to_string(tiles_n - 1), "(mt_q & 1)"), ", mt_fb[", tiles_n - 1,
                      "][0], mt_fb[", tiles_n - 1, "][1]);"));
  }
  unrolled("i", tiles_m);
  unrolled("j", tiles_n);
  std::vector<std::string> c_regs;
  for (int e = 0; e < 4; ++e) {
    c_regs.push_back(absl::StrCat(out, "[(i * ", unit->row_regs, " + ", e >> 1, ") * ", row_stride, " + j * ",
                                  unit->col_regs, " + ", e & 1, "]"));
  }
  line(spelling_.matrix_multiply_words(*unit, {"mt_fa[i][0]", "mt_fa[i][1]", "mt_fa[i][2]", "mt_fa[i][3]"},
                                       {"mt_fb[j][0]", "mt_fb[j][1]"}, c_regs));
  close();
  close();
  close();
  close();
  return absl::OkStatus();
}

}  // namespace monotile::dsl::lower
