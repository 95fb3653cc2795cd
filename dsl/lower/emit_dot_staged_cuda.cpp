// Pipelined dots, NVIDIA only (sm_80+: cp.async, ldmatrix, mma.sync; sm_90a: wgmma; the plan is in
// pipeline.h): the staged loads of a `for` body are issued as asynchronous 16-byte global -> shared
// copies `ahead` iterations ahead (a prologue fills the first stages), and
// the dot reads its fragments from the stage with matrix loads. Invariant: at the top of iteration
// t, after the wait and the barrier, stage t % stages holds iteration t's tiles and no thread or
// MMA still reads stage (t + ahead) % stages, which the copies for iteration t + ahead refill
// (ahead = stages - 1; stages - 2 when iteration t - 1's MMAs may still run).
// Tiles are XOR-swizzled in 16-byte units so that the 8 rows a matrix load reads hit distinct banks.
// A warpgroup dot (sm_90a wgmma) instead hands the stage to the unit through matrix descriptors: its
// 128-byte rows are the unit's 128-byte swizzle when the stage is 1024-byte aligned, and A's rows
// are stored in the order the instructions take them, so each warp's accumulator rows are the ones
// its layout (all warps along M) says.
#include <string>

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

// The stored row of A's row `r` in a warpgroup dot. The accumulator layout gives warp v = 4 g + w
// (warpgroup g of `groups`, w its warp) rows 8 v + j + 8 num_warps rep (j < 8); instruction t of
// warpgroup g takes stored rows 64 (groups t + g) + 16 w + 8 h + j into its warp w's fragment rows
// j and 8 + j. So row r = 64 groups t + 32 groups h + 32 g + 8 w + j is stored at
// 64 groups t + 64 g + 16 w + 8 h + j (rep = 2 t + h): eight-row groups move whole, keeping the swizzle.
std::string warpgroup_row(const std::string& r, int groups) {
  const int group_rows = 32 * groups;
  return absl::StrCat("(((", r, ") & 7) | (((", r, ") >> 3) & 3) << 4 | ((((", r, ") / 32) % ", groups,
                      ") << 6) | ((((", r, ") / ", group_rows, ") & 1) << 3) | (((", r, ") / ", 2 * group_rows,
                      ") * ", 2 * group_rows, "))");
}

std::string in_range(const std::string& index, const std::string& hi, const std::string& step) {
  return absl::StrCat("(", step, " > 0 ? ", index, " < ", hi, " : ", index, " > ", hi, ")");
}

// One 16-byte asynchronous copy of a staged load: zero-filled where `mask` (its lane's value) is
// false, with L2 fetching `l2_fetch` bytes around it where the load asks for that
// (AccessOptions::l2_fetch; 0: the copy alone).
std::string copy_call(const std::string& dst, const std::string& at, const std::string& mask, int l2_fetch) {
  const std::string fetch = l2_fetch == 0 ? "" : absl::StrCat("_l2_", l2_fetch);
  return mask.empty() ? absl::StrCat("mt_cp_async16", fetch, "(", dst, ", ", at, ");")
                      : absl::StrCat("mt_cp_async16_zfill", fetch, "(", dst, ", ", at, ", ", mask, ");");
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
  // A staged load's tile in 16-byte units, each copied by its owner thread (zero-filled where masked).
  for (const StagedLoad& staged : loop.loads) {
    if (!status.ok()) break;
    const int64_t unit = 16 / staged.bytes;
    Layout layout = Layout::blocked({staged.rows, staged.cols}, unit, state_.target.warp_size(),
                                    state_.program.options.num_warps);
    std::string ptrs = get(staged.load->operands[0], layout);
    std::string mask = staged.mask == kNoValue ? "" : get(staged.mask, layout);
    std::string guard = owner(layout);
    unrolled("g", layout.num_regs() / unit);
    line(absl::StrCat("const int r = ", coord(layout, 0, absl::StrCat("g * ", unit)), ";"));
    line(absl::StrCat("const int c = ", coord(layout, 1, absl::StrCat("g * ", unit)), " / ", unit, ";"));
    std::string dst = absl::StrCat(stage, " + ", staged.offset, " + ",
                                   swizzled_unit("r", "c", staged.cols / unit), " * 16");
    std::string at = absl::StrCat(ptrs, "[g * ", unit, "]");
    line(absl::StrCat(guard.empty() ? "" : absl::StrCat("if (", guard, ") "),
                      copy_call(dst, at, mask.empty() ? "" : absl::StrCat(mask, "[g * ", unit, "]"),
                                staged.load->attrs.l2_fetch)));
    close();
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
      std::string row = coord(layout, 0, "g * 8");
      if (dot.warpgroup && operand == &dot.a) row = warpgroup_row(row, state_.program.options.num_warps / 4);
      line(absl::StrCat("const int r = ", row, ";"));
      line(absl::StrCat("const int c = ", coord(layout, 1, "g * 8"), " / 8;"));
      std::string dst = absl::StrCat(stage, " + ", operand->offset, " + ", swizzled_unit("r", "c", operand->cols / 8),
                                     " * 16");
      line(absl::StrCat(guard.empty() ? "" : absl::StrCat("if (", guard, ") "),
                        copy_call(dst, absl::StrCat(ptrs, "[g * 8]"), mask.empty() ? "" : absl::StrCat(mask, "[g * 8]"),
                                  operand->load->attrs.l2_fetch)));
      close();
    }
  }
  scopes_ = std::move(saved);
  close();
  return status;
}

absl::Status OpLowering::pipeline_prologue(const Op& op, const PipelinedLoop& loop, LoopPipeline& state) {
  const bool realign = loop.align > 128;  // the stages' base is rounded up within `align` extra bytes
  pipe_bytes_ = std::max<int64_t>(pipe_bytes_, loop.stages * loop.stage_bytes + (realign ? loop.align : 0));
  std::string lo = name(op.operands[0]) + "[0]";
  std::string hi = name(op.operands[1]) + "[0]";
  std::string step = name(op.operands[2]) + "[0]";
  state.base = fresh("stages");
  state.read = fresh("stage_read");
  state.write = fresh("stage_write");
  line(absl::StrCat("// ", loop.dots.size(), " dot(s) and ", loop.loads.size(), " load(s) pipelined over ", loop.stages,
                    " stages of ", loop.stage_bytes, " bytes"));
  if (realign) {
    line(absl::StrCat("const unsigned ", state.base, " = (mt_shared_u32(mt_smem + mt_pipe_offset) + ", loop.align - 1,
                      "u) & ~", loop.align - 1, "u;"));
  } else {
    line(absl::StrCat("const unsigned ", state.base, " = mt_shared_u32(mt_smem + mt_pipe_offset);"));
  }
  barrier();  // an earlier run of this loop may still read the stages
  for (int s = 0; s < loop.ahead; ++s) {
    std::string index = absl::StrCat("(", lo, " + ", s, " * ", step, ")");
    open(absl::StrCat("if ", in_range(index, hi, step)));
    MT_RETURN_IF_ERROR(stage_copies(loop, index, absl::StrCat(state.base, " + ", s * loop.stage_bytes)));
    close();
    line("mt_cp_async_commit();");
  }
  line(absl::StrCat("unsigned ", state.read, " = ", state.base, ";"));
  line(absl::StrCat("unsigned ", state.write, " = ", state.base, " + ", loop.ahead * loop.stage_bytes, ";"));
  return absl::OkStatus();
}

absl::Status OpLowering::pipeline_top(const Op& op, const PipelinedLoop& loop, const LoopPipeline& state,
                                      const std::string& index) {
  std::string hi = name(op.operands[1]) + "[0]";
  std::string step = name(op.operands[2]) + "[0]";
  line(absl::StrCat("mt_cp_async_wait<", loop.ahead - 1, ">();"));
  // The warpgroup MMA reads shared memory through the async proxy: this thread's landed copies are
  // ordered before those reads here, and the barrier orders every thread's.
  bool warpgroup = false;
  for (const StagedDot& dot : loop.dots) warpgroup = warpgroup || dot.warpgroup;
  if (warpgroup) line("mt_fence_proxy_async();");
  barrier();
  std::string ahead = absl::StrCat("(", index, " + ", loop.ahead, " * ", step, ")");
  open(absl::StrCat("if ", in_range(ahead, hi, step)));
  MT_RETURN_IF_ERROR(stage_copies(loop, ahead, state.write));
  close();
  line("mt_cp_async_commit();");
  return absl::OkStatus();
}

// After the loop: no copy is left in flight (their stages may be reused), nor any MMA, and the
// accumulators are read only after that wait.
void OpLowering::pipeline_epilogue(const Op& op, const PipelinedLoop& loop) {
  line("mt_cp_async_wait<0>();");
  if (!loop.mma_in_flight) return;
  line("mt_wgmma_wait<0>();");
  const Block& body = op.regions.at(0);
  for (size_t i = 1; i < body.args.size(); ++i) {
    if (is_scalar(body.args[i]) || type(body.args[i]).element.scalar != ScalarType::kF32) continue;
    unrolled("i", layout_or_default(body.args[i]).num_regs());
    line(absl::StrCat("mt_wgmma_hold(", name(body.args[i]), "[i]);"));
    close();
  }
}

void OpLowering::pipeline_advance(const PipelinedLoop& loop, const LoopPipeline& state) {
  std::string last = absl::StrCat(state.base, " + ", (loop.stages - 1) * loop.stage_bytes);
  for (const std::string& var : {state.read, state.write}) {
    line(absl::StrCat(var, " = ", var, " == ", last, " ? ", state.base, " : ", var, " + ", loop.stage_bytes, ";"));
  }
}

// Each group of up to 16 contiguous bytes the load's layout gives a thread is one shared read, at
// the swizzled place stage_copies put it.
absl::Status OpLowering::load_staged(const Op& op, const StagedLoad& staged, const std::string& stage) {
  ValueId result = op.results[0];
  ScalarType element = type(result).element.scalar;
  Layout layout = layout_or_default(result);
  const int64_t regs = layout.num_regs();
  const int64_t unit = 16 / staged.bytes;
  int64_t vec = 1;
  while (vec * 2 <= std::min<int64_t>(layout.dim(1).spt, unit) && layout.dim(1).spt % (vec * 2) == 0) vec *= 2;
  const int64_t total = vec * staged.bytes;
  std::string out = name(result);
  declare(result, regs);
  line(absl::StrCat("// load from the pipeline's stage (", staged.rows, " x ", staged.cols, ")"));
  open("");
  line(absl::StrCat("const unsigned char* mt_sp = mt_smem + (", stage, " - mt_shared_u32(mt_smem)) + ", staged.offset,
                    ";"));
  unrolled("g", regs / vec);
  line(absl::StrCat("const int i = g * ", vec, ";"));
  line(absl::StrCat("const int r = ", coord(layout, 0, "i"), ";"));
  line(absl::StrCat("const int c = ", coord(layout, 1, "i"), ";"));
  line(absl::StrCat("const unsigned char* mt_at = mt_sp + ", swizzled_unit("r", absl::StrCat("c / ", unit), staged.cols / unit),
                    " * 16 + (c % ", unit, ") * ", staged.bytes, ";"));
  line(absl::StrCat("unsigned mt_w[", std::max<int64_t>(total / 4, 1), "];"));
  if (total >= 8) {
    line(absl::StrCat(to_absl(word_struct(static_cast<int>(total))), " mt_t = *(const ",
                      to_absl(word_struct(static_cast<int>(total))), "*)mt_at;"));
    for (int64_t w = 0; w < total / 4; ++w) line(absl::StrCat("mt_w[", w, "] = mt_t.v[", w, "];"));
  } else {
    line(absl::StrCat("mt_w[0] = *(const ", to_absl(word_struct(static_cast<int>(total))), "*)mt_at;"));
  }
  for (int64_t j = 0; j < vec; ++j) {
    line(absl::StrCat(out, "[i + ", j, "] = ", from_bits(element, extract("mt_w", static_cast<int>(j), staged.bytes)),
                      ";"));
  }
  close();
  close();
  return absl::OkStatus();
}

absl::Status OpLowering::dot_staged(const Op& op, const StagedDot& staged, const std::string& stage) {
  if (staged.warpgroup) return dot_warpgroup(op, staged, stage);
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
  MT_CHECK(tiles_m * unit->shape.m * rows.wpb == m && tiles_n * unit->shape.n * cols.wpb == n,
           "the accumulator's warps must split its tiles evenly");
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

// Per 16-wide K step, each warpgroup issues one m64 n k16 instruction per 64 of its rows, then waits
// for all of them, or (mma_in_flight) for the previous iteration's.
absl::Status OpLowering::dot_warpgroup(const Op& op, const StagedDot& staged, const std::string& stage) {
  const Type& a_type = type(op.operands[0]);
  const Type& b_type = type(op.operands[1]);
  int64_t m = a_type.shape[0];
  int64_t k = a_type.shape[1];
  int64_t n = b_type.shape[1];
  const int num_warps = state_.program.options.num_warps;
  const int groups = num_warps / 4;
  ValueId result = op.results[0];
  Layout out_layout = layout_or_default(result);
  MT_CHECK(spelling_.warpgroup_multiply != nullptr, "planned without a warpgroup MMA");
  MT_CHECK(out_layout.dim(0).wpb == num_warps && out_layout.dim(1).wpb == 1 && out_layout.dim(0).spt == 1 &&
               out_layout.dim(0).tpw == 8 && out_layout.dim(1).spt == 2 && out_layout.dim(1).tpw == 4,
           "a warpgroup dot's accumulator has every warp along M in m16n8k16 fragment order");
  const int64_t rounds = m / (64 * groups);  // instructions along M per warpgroup and K step
  const int64_t row_stride = out_layout.reg_stride(0);
  MatrixOperand operand = a_type.element.scalar == ScalarType::kBf16 ? MatrixOperand::kBf16 : MatrixOperand::kF16;
  std::string acc = get(op.operands[2], out_layout);
  std::string out = name(result);
  declare(result, out_layout.num_regs());
  copy_into(out, acc, out_layout.num_regs());
  line(absl::StrCat("// dot [", m, ", ", k, "] x [", k, ", ", n, "] on wgmma.m64n", n, "k16 (", groups,
                    " warpgroup(s), ", rounds, " instruction(s) each per K step), operands from the pipeline's stage"));
  open("");
  // Warpgroup g's instructions start at A's stored row 64 g (64 groups t further for the t-th).
  line(absl::StrCat("const unsigned mt_wa = ", stage, " + ", staged.a.offset, " + (unsigned)(mt_warp >> 2) * ", 64 * 128,
                    ";"));
  line(absl::StrCat("const unsigned mt_wb = ", stage, " + ", staged.b.offset, ";"));
  // The empty asm statements keep the compiler from moving accumulator accesses across the fence
  // and the wait (they emit nothing).
  auto hold = [&] {
    unrolled("i", out_layout.num_regs());
    line(absl::StrCat("mt_wgmma_hold(", out, "[i]);"));
    close();
  };
  hold();
  line("mt_wgmma_fence();");
  for (int64_t kk = 0; kk < k / 16; ++kk) {
    for (int64_t t = 0; t < rounds; ++t) {
      // Register i of the instruction: row half (i >> 1) & 1, column 8 (i >> 2) + 2 (lane & 3) + (i & 1).
      std::vector<std::string> c;
      for (int64_t i = 0; i < n / 2; ++i) {
        c.push_back(absl::StrCat(out, "[", (2 * t + ((i >> 1) & 1)) * row_stride + (i >> 2) * 2 + (i & 1), "]"));
      }
      std::string a_desc = absl::StrCat("mt_wgmma_desc(mt_wa + ", t * groups * 64 * 128 + kk * 32, ")");
      std::string b_desc = absl::StrCat("mt_wgmma_desc(mt_wb + ", kk * 32, ")");
      line(spelling_.warpgroup_multiply(operand, static_cast<int>(n), a_desc, b_desc, c));
    }
  }
  line("mt_wgmma_commit();");
  const PipelinedLoop* loop = nullptr;
  for (const PipelinedLoop& candidate : pipelines_.loops) {
    for (const StagedDot& dot : candidate.dots) {
      if (dot.dot == &op) loop = &candidate;
    }
  }
  MT_CHECK(loop != nullptr);
  // In flight, this iteration's MMAs run on: the previous iteration's are done once every warp passes
  // the next barrier, before the copies refill their stage, and the epilogue waits for the last.
  line(loop->mma_in_flight ? "mt_wgmma_wait<1>();" : "mt_wgmma_wait<0>();");
  hold();
  close();
  return absl::OkStatus();
}

}  // namespace monotile::dsl::lower
