// dot on the matrix units: operands go through shared memory as 16-bit patterns, each warp loads
// the fragments of its tiles (the unit's fragment maps, data in matrix_unit.cpp) and issues the
// vendor's instruction; the accumulator stays in registers in the unit's layout. Shapes the unit
// cannot take (below its minimum, not a multiple, f32 operands) use an exact-order FMA loop over
// shared memory.
#include <algorithm>
#include <array>
#include <set>

#include "absl/strings/str_cat.h"
#include "dsl/lower/op_lowering.h"
#include "support/check.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

// K steps of a register-operand dot unrolled together.
constexpr int64_t kMaxUnrolledKSteps = 8;

std::string half_bits(ScalarType type, const std::string& value) {
  if (type == ScalarType::kBf16)
    return absl::StrCat("(unsigned short)(__float_as_uint(", value, ") >> 16)");
  return absl::StrCat("mt_f32_to_f16_bits(", value, ")");
}

}  // namespace

absl::Status OpLowering::dot(const Op& op) {
  if (fused_dots_.erase(&op) > 0) return absl::OkStatus();  // emitted with the dot it follows
  const Type& a_type = type(op.operands[0]);
  const Type& b_type = type(op.operands[1]);
  int64_t m = a_type.shape[0];
  int64_t k = a_type.shape[1];
  int64_t n = b_type.shape[1];
  Layout out_layout = layout_or_default(op.results[0]);
  if (const StagedDot* staged = pipelines_.staged_dot(&op))
    return dot_staged(op, *staged, stage_read_.at(&op));
  std::optional<MatrixUnit> unit =
      choose_matrix_unit(state_.target, a_type.element.scalar, b_type.element.scalar, m, n, k);
  if (!unit) return dot_fma(op, out_layout);
  if (std::optional<RegisterOperands> operands = register_operands(op, *unit, out_layout))
    return dot_from_registers(op, *unit, *operands);
  // A's rows are padded so that their 32-bit words start 4 banks apart (mod 32): the lanes of a
  // fragment load read 8 rows (mma) or 32 (MFMA) at one column, which unpadded rows of k a multiple
  // of 64 elements put in one bank (an 8- or 32-way conflict; most of K2's time before the pad).
  // Where the pad alone would overflow the target's shared memory, the rows stay unpadded.
  const int64_t limit = state_.target.shared_memory_per_block();
  auto placed = [&](int64_t base, int64_t a_stride) {
    const int64_t b_offset = base + (m * a_stride * 2 + 15) / 16 * 16;
    return DotOperands{.a_offset = base,
                       .a_stride = a_stride,
                       .b_offset = b_offset,
                       .end = (b_offset + k * n * 2 + 15) / 16 * 16};
  };
  DotOperands first = placed(0, k % 16 == 0 ? k + 8 : k);
  if (first.end > limit) first = placed(0, k);
  // A dot whose accumulator is this one's result, and whose operands exist already (a K step split
  // in two, as the MXFP4 GEMV's low and high nibbles), stages its operands beside this one's: one
  // pair of barriers for both, and the second's K loop follows the first's without a wait.
  const Op* chained = chained_dot(op);
  std::optional<DotOperands> second;
  if (chained != nullptr && placed(first.end, first.a_stride).end <= limit)
    second = placed(first.end, first.a_stride);
  std::vector<std::pair<const Op*, DotOperands>> dots = {{&op, first}};
  if (second) dots.emplace_back(chained, *second);
  need_smem(dots.back().second.end);
  // Every operand is in its registers before shared memory is written (a conversion uses it too).
  std::vector<std::array<std::string, 2>> sources;
  for (const auto& [dot_op, placement] : dots) {
    sources.push_back({get(dot_op->operands[0], layout_or_default(dot_op->operands[0])),
                       get(dot_op->operands[1], layout_or_default(dot_op->operands[1]))});
  }
  std::string acc = get(op.operands[2], out_layout);
  line(absl::StrCat("// dot [", m, ", ", k, "] x [", k, ", ", n, "] on ",
                    to_absl(unit->shape.instruction),
                    second ? ", and the dot chained on it: operands staged together" : ""));
  barrier();
  for (size_t d = 0; d < dots.size(); ++d) {
    const auto& [dot_op, placement] = dots[d];
    for (int which = 0; which < 2; ++which) {
      ValueId value = dot_op->operands[which];
      const Layout layout = layout_or_default(value);
      const std::vector<int64_t> strides =
          which == 0 ? std::vector<int64_t>{placement.a_stride, 1} : row_major(type(value).shape);
      const std::string target =
          smem("unsigned short", which == 0 ? placement.a_offset : placement.b_offset);
      std::string guard = owner(layout);
      unrolled("i", layout.num_regs());
      line(absl::StrCat(
          guard.empty() ? "" : absl::StrCat("if (", guard, ") "), target, "[",
          linear(layout, "i", strides),
          "] = ", half_bits(a_type.element.scalar, absl::StrCat(sources[d][which], "[i]")), ";"));
      close();
    }
  }
  barrier();
  for (const auto& [dot_op, placement] : dots) {
    std::string out = name(dot_op->results[0]);
    declare(dot_op->results[0], out_layout.num_regs());
    copy_into(out, acc, out_layout.num_regs());
    dot_k_loop(*unit, m, k, n, out_layout, out, placement);
    acc = out;
  }
  if (second) fused_dots_.insert(chained);
  return absl::OkStatus();
}

const Op* OpLowering::chained_dot(const Op& op) const {
  const auto found = next_dot_.find(&op);
  if (found == next_dot_.end()) return nullptr;
  // Equal operand types make the same matrix unit; an equal accumulator layout, the same tiles.
  const Op& next = *found->second;
  if (pipelines_.staged_dot(&next) != nullptr || type(next.operands[0]) != type(op.operands[0]) ||
      type(next.operands[1]) != type(op.operands[1]) ||
      layout_or_default(next.results[0]) != layout_or_default(op.results[0])) {
    return nullptr;
  }
  return &next;
}

void OpLowering::dot_k_loop(const MatrixUnit& unit, int64_t m, int64_t k, int64_t n,
                            const Layout& out_layout, const std::string& out,
                            const DotOperands& placement) {
  const std::string a_words = smem("unsigned", placement.a_offset);
  const std::string b_smem = smem("unsigned short", placement.b_offset);
  const int64_t a_stride = placement.a_stride;
  const DimLayout& rows = out_layout.dim(0);
  const DimLayout& cols = out_layout.dim(1);
  int64_t tiles_m = m / (unit.shape.m * rows.wpb);
  int64_t tiles_n = n / (unit.shape.n * cols.wpb);
  MT_CHECK(tiles_m * unit.shape.m * rows.wpb == m && tiles_n * unit.shape.n * cols.wpb == n,
           "the accumulator's warps must split its tiles evenly");
  int64_t row_stride = out_layout.reg_stride(0);
  open("");
  line("const int lane = mt_lane;");
  line(absl::StrCat(
      "const int mt_wr = ",
      rows.wpb == 1 ? "0" : absl::StrCat("(mt_warp / ", rows.warp_stride, ") % ", rows.wpb), ";"));
  line(absl::StrCat(
      "const int mt_wc = ",
      cols.wpb == 1 ? "0" : absl::StrCat("(mt_warp / ", cols.warp_stride, ") % ", cols.wpb), ";"));
  // Unrolled, so that the fragment loads of later K steps are issued ahead of the matrix
  // instructions that wait for them (a rolled loop left each step's loads behind the last step's
  // mma); unrolled at most kMaxUnrolledKSteps deep to bound the registers held in flight.
  line(absl::StrCat("#pragma unroll ", std::min<int64_t>(k / unit.shape.k, kMaxUnrolledKSteps)));
  open(absl::StrCat("for (int kk = 0; kk < ", k / unit.shape.k, "; ++kk)"));
  line(absl::StrCat("unsigned short mt_b[", tiles_n, "][", unit.b_elems, "];"));
  unrolled("j", tiles_n);
  unrolled("e", unit.b_elems);
  line(absl::StrCat("const int c = ", to_absl(unit.b_col), ";"));
  line(absl::StrCat("const int kc = j * ", unit.col_regs, " + ", to_absl(unit.col_reg), ";"));
  line(absl::StrCat("const int col = (mt_wc * ", cols.tpw, " + ", to_absl(unit.col_lane), ") * ",
                    cols.spt, " + kc % ", cols.spt, " + (kc / ", cols.spt, ") * ", cols.cover(),
                    ";"));
  line(absl::StrCat("mt_b[j][e] = ", b_smem, "[(kk * ", unit.shape.k, " + ", to_absl(unit.b_k),
                    ") * ", n, " + col];"));
  close();
  close();
  unrolled("i", tiles_m);
  line(absl::StrCat("unsigned short mt_a[", unit.a_elems, "];"));
  // A's elements 2p and 2p + 1 are neighbours along K in one row (matrix_unit.h): one 32-bit load.
  MT_CHECK(unit.a_elems % 2 == 0, "A fragments hold element pairs");
  unrolled("p", unit.a_elems / 2);
  line("const int e = 2 * p;");
  line(absl::StrCat("const int rho = ", to_absl(unit.a_row), ";"));
  line(absl::StrCat("const int kr = i * ", unit.row_regs, " + ", to_absl(unit.row_reg), ";"));
  line(absl::StrCat("const int row = (mt_wr * ", rows.tpw, " + ", to_absl(unit.row_lane), ") * ",
                    rows.spt, " + kr % ", rows.spt, " + (kr / ", rows.spt, ") * ", rows.cover(),
                    ";"));
  line(absl::StrCat("const unsigned mt_pair = ", a_words, "[(row * ", a_stride, " + kk * ",
                    unit.shape.k, " + ", to_absl(unit.a_k), ") / 2];"));
  line("mt_a[e] = (unsigned short)(mt_pair & 0xffffu);");
  line("mt_a[e + 1] = (unsigned short)(mt_pair >> 16);");
  close();
  multiply_tiles(unit, tiles_n, row_stride, out);
  close();
  close();
  close();
}

void OpLowering::multiply_tiles(const MatrixUnit& unit, int64_t tiles_n, int64_t row_stride,
                                const std::string& out) {
  unrolled("j", tiles_n);
  line(absl::StrCat("float mt_c[", unit.c_elems, "];"));
  std::string reg =
      absl::StrCat("(i * ", unit.row_regs, " + ", to_absl(unit.c_row_reg), ") * ", row_stride,
                   " + j * ", unit.col_regs, " + ", to_absl(unit.c_col_reg));
  unrolled("e", unit.c_elems);
  line(absl::StrCat("mt_c[e] = ", out, "[", reg, "];"));
  close();
  line(spelling_.matrix_multiply(unit, "mt_a", "mt_b[j]", "mt_c"));
  unrolled("e", unit.c_elems);
  line(absl::StrCat(out, "[", reg, "] = mt_c[e];"));
  close();
  close();
}

std::optional<OpLowering::RegisterOperands> OpLowering::register_operands(
    const Op& op, const MatrixUnit& unit, const Layout& out_layout) const {
  ValueId a = op.operands[0], b = op.operands[1];
  if (!state_.layouts[a]) return std::nullopt;  // lazy (a constant): staged
  const int64_t k = type(a).shape[1];
  const int run = state_.layouts[a]->dim(1).spt;
  std::optional<Layout> a_fragments = fragment_layout(unit, 0, k, out_layout, run);
  if (!a_fragments || *state_.layouts[a] != *a_fragments) return std::nullopt;
  std::optional<Layout> b_fragments = fragment_layout(unit, 1, k, out_layout, run);
  return RegisterOperands{
      .run = run,
      .b_in_registers = b_fragments && state_.layouts[b] && *state_.layouts[b] == *b_fragments};
}

// A's fragments straight from its registers: A's layout is fragment_layout's, so lane L holds, for
// each of its tile rows, K in runs of `run`; K slot s of instruction kk is the lane's register
// kk * slots + s along K, whichever logical K that is. B's fragments come from its registers in the
// matching layout, or from shared memory at the logical K of the same slot.
absl::Status OpLowering::dot_from_registers(const Op& op, const MatrixUnit& unit,
                                            const RegisterOperands& operands) {
  const Type& a_type = type(op.operands[0]);
  const int64_t m = a_type.shape[0], k = a_type.shape[1], n = type(op.operands[1]).shape[1];
  const Layout out_layout = layout_or_default(op.results[0]);
  const Layout a_layout = *state_.layouts[op.operands[0]];
  const Layout b_layout = layout_or_default(op.operands[1]);
  const std::string a = get(op.operands[0], a_layout);
  const std::string b = get(op.operands[1], b_layout);
  const std::string acc = get(op.operands[2], out_layout);
  const DimLayout& rows = out_layout.dim(0);
  const DimLayout& cols = out_layout.dim(1);
  const int64_t tiles_m = m / (unit.shape.m * rows.wpb);
  const int64_t tiles_n = n / (unit.shape.n * cols.wpb);
  const int64_t slots = unit.shape.k / unit.k_tpw;  // K slots a lane supplies per instruction
  const int64_t row_reps = unit.shape.m / unit.a_row_tpw;
  line(absl::StrCat("// dot [", m, ", ", k, "] x [", k, ", ", n, "] on ",
                    to_absl(unit.shape.instruction), ", A's fragments from its registers",
                    operands.b_in_registers ? " and B's" : "", " (K in runs of ", operands.run,
                    " a lane)"));
  const int64_t b_offset = 0;
  if (!operands.b_in_registers) {
    need_smem(k * n * 2);
    barrier();
    std::string guard = owner(b_layout);
    unrolled("i", b_layout.num_regs());
    line(absl::StrCat(guard.empty() ? "" : absl::StrCat("if (", guard, ") "),
                      smem("unsigned short", b_offset), "[",
                      linear(b_layout, "i", row_major({k, n})),
                      "] = ", half_bits(a_type.element.scalar, absl::StrCat(b, "[i]")), ";"));
    close();
    barrier();
  }
  std::string out = name(op.results[0]);
  declare(op.results[0], out_layout.num_regs());
  copy_into(out, acc, out_layout.num_regs());
  open("");
  line("const int lane = mt_lane;");
  line(absl::StrCat(
      "const int mt_wc = ",
      cols.wpb == 1 ? "0" : absl::StrCat("(mt_warp / ", cols.warp_stride, ") % ", cols.wpb), ";"));
  // Every K step unrolled: fragment registers are picked by constant indices.
  line("#pragma unroll");
  open(absl::StrCat("for (int kk = 0; kk < ", k / unit.shape.k, "; ++kk)"));
  line(absl::StrCat("unsigned short mt_b[", tiles_n, "][", unit.b_elems, "];"));
  unrolled("j", tiles_n);
  unrolled("e", unit.b_elems);
  line(absl::StrCat("const int t = kk * ", slots, " + ", to_absl(unit.b_k_slot), ";"));
  if (operands.b_in_registers) {
    line(absl::StrCat(
        "mt_b[j][e] = ",
        half_bits(a_type.element.scalar, absl::StrCat(b, "[t * ", b_layout.reg_stride(0), " + j * ",
                                                      b_layout.reg_stride(1), "]")),
        ";"));
  } else {
    line(absl::StrCat("const int kl = (t / ", operands.run, ") * ",
                      int64_t{operands.run} * unit.k_tpw, " + ((lane / ", unit.k_lane_stride,
                      ") % ", unit.k_tpw, ") * ", operands.run, " + t % ", operands.run, ";"));
    line(absl::StrCat("const int c = ", to_absl(unit.b_col), ";"));
    line(absl::StrCat("const int kc = j * ", unit.col_regs, " + ", to_absl(unit.col_reg), ";"));
    line(absl::StrCat("const int col = (mt_wc * ", cols.tpw, " + ", to_absl(unit.col_lane), ") * ",
                      cols.spt, " + kc % ", cols.spt, " + (kc / ", cols.spt, ") * ", cols.cover(),
                      ";"));
    line(absl::StrCat("mt_b[j][e] = ", smem("unsigned short", b_offset), "[kl * ", n, " + col];"));
  }
  close();
  close();
  unrolled("i", tiles_m);
  line(absl::StrCat("unsigned short mt_a[", unit.a_elems, "];"));
  unrolled("e", unit.a_elems);
  line(absl::StrCat("mt_a[e] = ",
                    half_bits(a_type.element.scalar,
                              absl::StrCat(a, "[(i * ", row_reps, " + ", to_absl(unit.a_row_rep),
                                           ") * ", a_layout.reg_stride(0), " + kk * ", slots, " + ",
                                           to_absl(unit.a_k_slot), "]")),
                    ";"));
  close();
  multiply_tiles(unit, tiles_n, out_layout.reg_stride(0), out);
  close();
  close();
  close();
  return absl::OkStatus();
}

namespace {

// How many times `value` is an operand in `block`, its nested regions included.
int uses_of(const Block& block, ValueId value) {
  int uses = 0;
  for (const Op& op : block.ops) {
    uses += static_cast<int>(std::count(op.operands.begin(), op.operands.end(), value));
    for (const Block& region : op.regions) uses += uses_of(region, value);
  }
  return uses;
}

}  // namespace

void OpLowering::find_chained_dots(const Block& block) {
  for (size_t i = 0; i < block.ops.size(); ++i) {
    const Op& first = block.ops[i];
    if (first.code != OpCode::kDot) continue;
    const ValueId result = first.results[0];
    std::set<ValueId> defined_after;  // values made between the two dots
    for (size_t j = i + 1; j < block.ops.size(); ++j) {
      const Op& next = block.ops[j];
      if (next.code == OpCode::kDot && next.operands[2] == result) {
        if (!defined_after.contains(next.operands[0]) &&
            !defined_after.contains(next.operands[1]) && uses_of(block, result) == 1) {
          next_dot_[&first] = &next;
        }
        break;
      }
      defined_after.insert(next.results.begin(), next.results.end());
    }
  }
}

absl::Status OpLowering::dot_fma(const Op& op, const Layout& out_layout) {
  const Type& a_type = type(op.operands[0]);
  const Type& b_type = type(op.operands[1]);
  if (!is_float(a_type.element.scalar) || a_type.element.scalar == ScalarType::kF64 ||
      a_type.element.scalar != b_type.element.scalar) {
    return unsupported(op, absl::StrCat("takes f16, bf16 or f32 operands of one type, got ",
                                        a_type.str(), " and ", b_type.str()));
  }
  int64_t m = a_type.shape[0];
  int64_t k = a_type.shape[1];
  int64_t n = b_type.shape[1];
  int64_t b_offset = (m * k * 4 + 15) / 16 * 16;
  need_smem(b_offset + k * n * 4);
  std::vector<Layout> layouts = {layout_or_default(op.operands[0]),
                                 layout_or_default(op.operands[1])};
  std::vector<std::string> sources = {get(op.operands[0], layouts[0]),
                                      get(op.operands[1], layouts[1])};
  std::string acc = get(op.operands[2], out_layout);
  line(absl::StrCat("// dot [", m, ", ", k, "] x [", k, ", ", n,
                    "] with FMA (no matrix unit for this shape/type)"));
  barrier();
  for (int which = 0; which < 2; ++which) {
    ValueId value = op.operands[which];
    const Layout& layout = layouts[which];
    const std::string& src = sources[which];
    std::vector<int64_t> strides = row_major(type(value).shape);
    std::string guard = owner(layout);
    unrolled("i", layout.num_regs());
    line(absl::StrCat(guard.empty() ? "" : absl::StrCat("if (", guard, ") "),
                      smem("float", which == 0 ? 0 : b_offset), "[", linear(layout, "i", strides),
                      "] = ", src, "[i];"));
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
  line(absl::StrCat("for (int kk = 0; kk < ", k, "; ++kk) mt_s = fmaf(", smem("float"), "[row * ",
                    k, " + kk], ", smem("float", b_offset), "[kk * ", n, " + col], mt_s);"));
  line(absl::StrCat(out, "[i] = mt_s;"));
  close();
  return absl::OkStatus();
}

}  // namespace monotile::dsl::lower
