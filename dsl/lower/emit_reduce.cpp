// Reductions and scans along an axis. A reduction combines a thread's registers along the axis,
// then the lanes along it with xor shuffles, then the warps along it through shared memory; the
// result is in the slice layout (replicated over the reduced lanes and warps), so broadcasting it
// back over the parent tile costs nothing. Every lane-level combine takes the lower lane's partial
// first, so each result is the same bits in every lane and whether or not lanes share the work of
// several results. f16/bf16 sums accumulate in f32 and round once. Scans run Hillis-Steele steps
// through shared memory (log2(n) steps), keeping the combine's left-to-right order.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "dsl/lower/op_lowering.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

int log2_of(int64_t power_of_two) {
  int bits = 0;
  while ((int64_t{1} << bits) < power_of_two) ++bits;
  return bits;
}

// How many of the lane levels of a reduction with `regs` results a lane and `lanes` lanes along the
// axis split the results between the two lanes of a pair (0: every result runs its own butterfly).
// With h such levels, each lane sends half of what it holds at each of them and keeps the other
// half, runs the remaining levels on regs / 2^h results, then gathers them back level by level. In
// instructions (a shuffle and a combine per plain step; a shuffle, two selects and a combine per
// halving step; a shuffle and two selects per gather step) that is 7 (R - R/2^h) + 2 (L - h) R/2^h
// against 2 R L: the h with the fewest, when it is fewer than the plain butterfly's.
int halving_levels(int64_t regs, int lanes) {
  const int levels = log2_of(lanes);
  const int most = std::min(log2_of(pow2_part(regs)), levels);
  const int64_t plain = 2 * regs * levels;
  int best = 0;
  int64_t best_cost = plain;
  for (int h = 1; h <= most; ++h) {
    const int64_t kept = regs >> h;
    const int64_t cost = 7 * (regs - kept) + 2 * (levels - h) * kept;
    if (cost < best_cost) {
      best = h;
      best_cost = cost;
    }
  }
  return best;
}

std::string round_result(ScalarType type, const std::string& value) {
  if (type == ScalarType::kBf16) return absl::StrCat("mt_round_bf16(", value, ")");
  if (type == ScalarType::kF16) return absl::StrCat("mt_round_f16(", value, ")");
  return value;
}

}  // namespace

std::string OpLowering::combine_function(const Op& op, ScalarType element) {
  std::string t = register_type(ElementType{element, false});
  std::string f = fresh("combine");
  if (op.attrs.reduce == ReduceKind::kCustom) {
    const Block& region = op.regions.at(0);
    open(absl::StrCat("auto ", f, " = [&](", t, " mt_a, ", t, " mt_b) -> ", t));
    line(absl::StrCat(reg_type(region.args.at(0)), " ", name(region.args[0]), "[1] = {mt_a};"));
    line(absl::StrCat(reg_type(region.args.at(1)), " ", name(region.args[1]), "[1] = {mt_b};"));
    push_scope();
    absl::Status status = block(region);
    MT_CHECK(status.ok(), "combine regions hold scalar ops only");
    pop_scope();
    line(absl::StrCat("return ", name(region.ops.back().operands.at(0)), "[0];"));
    close("};");
    return f;
  }
  std::string body;
  bool fp = is_float(element);
  switch (op.attrs.reduce) {
    case ReduceKind::kSum:
      body = fp ? "mt_a + mt_b"
                : absl::StrCat("(", t, ")((unsigned long long)mt_a + (unsigned long long)mt_b)");
      break;
    case ReduceKind::kMax: body = fp ? "mt_fmax(mt_a, mt_b)" : "(mt_a < mt_b ? mt_b : mt_a)"; break;
    case ReduceKind::kMin: body = fp ? "mt_fmin(mt_a, mt_b)" : "(mt_b < mt_a ? mt_b : mt_a)"; break;
    case ReduceKind::kXorSum: body = absl::StrCat("(", t, ")(mt_a ^ mt_b)"); break;
    case ReduceKind::kCustom: break;
  }
  line(absl::StrCat("auto ", f, " = [](", t, " mt_a, ", t, " mt_b) -> ", t, " { return ", body, "; };"));
  return f;
}

absl::Status OpLowering::reduce(const Op& op) {
  bool arg = op.code == OpCode::kArgReduce;
  ValueId operand = op.operands[0];
  ElementType element = type(operand).element;
  if (element.pointer) return unsupported(op, "cannot reduce pointers");
  if (op.attrs.reduce == ReduceKind::kXorSum && is_float(element.scalar)) {
    return unsupported(op, absl::StrCat("xor_sum takes integers, got ", type(operand).str()));
  }
  int axis = op.attrs.axis;
  Layout parent = layout_or_default(operand);
  Layout result_layout = parent.slice(axis);
  const DimLayout& along = parent.dim(axis);
  std::string src = get(operand, parent);
  std::string t = register_type(element);
  int64_t regs = result_layout.num_regs();
  std::string acc = fresh("acc");
  std::string idx = fresh("idx");
  std::string f = arg ? "" : combine_function(op, element.scalar);
  bool is_max = op.attrs.reduce == ReduceKind::kMax;
  // Source register of result register j and position k along the axis.
  std::string base = "0";
  for (int d = 0, e = 0; d < parent.rank(); ++d) {
    if (d == axis) continue;
    absl::StrAppend(&base, " + ((j / ", result_layout.reg_stride(e), ") % ", parent.dim(d).regs(), ") * ",
                    parent.reg_stride(d));
    ++e;
  }
  std::string at_k = absl::StrCat("(", base, " + k * ", parent.reg_stride(axis), ")");
  line(absl::StrCat(t, " ", acc, "[", regs, "];"));
  if (arg) line(absl::StrCat("int ", idx, "[", regs, "];"));
  unrolled("j", regs);
  line("const int k = 0;");
  line(absl::StrCat(acc, "[j] = ", src, "[", at_k, "];"));
  if (arg) line(absl::StrCat(idx, "[j] = ", coord(parent, axis, at_k), ";"));
  close();
  if (along.regs() > 1) {
    unrolled("j", regs);
    line("#pragma unroll");
    open(absl::StrCat("for (int k = 1; k < ", along.regs(), "; ++k)"));
    if (arg) {
      line(absl::StrCat("if (mt_arg_better(", is_max, ", ", src, "[", at_k, "], ", coord(parent, axis, at_k), ", ", acc,
                        "[j], ", idx, "[j])) { ", acc, "[j] = ", src, "[", at_k, "]; ", idx, "[j] = ",
                        coord(parent, axis, at_k), "; }"));
    } else {
      line(absl::StrCat(acc, "[j] = ", f, "(", acc, "[j], ", src, "[", at_k, "]);"));
    }
    close();
    close();
  }
  const int halvings = along.tpw > 1 && state_.program.options.multi_row_reductions
                           ? halving_levels(regs, along.tpw)
                           : 0;
  // Registers [0, kept) hold the results this lane still reduces; after the halving levels,
  // register p of a lane holds result p + (sum over level i of bit i of the lane's axis position) *
  // regs / 2^(i+1).
  const int64_t kept = regs >> halvings;
  if (halvings > 0) {
    line(absl::StrCat("// reduce over ", along.tpw, " lanes, ", regs, " results a lane: ", halvings,
                      " levels each keep half of them and send the other half"));
  }
  for (int level = 0; level < halvings; ++level) {
    const int64_t half = regs >> (level + 1);
    const int mask = along.lane_stride << level;
    open("");
    line(absl::StrCat("const bool mt_hi = (mt_lane & ", mask, ") != 0;"));
    unrolled("j", half);
    // Both registers are read into values before the selects: a select between two array elements
    // can become a load through a selected address, which puts the array in scratch (seen on
    // gfx90a).
    line(absl::StrCat(t, " mt_low = ", acc, "[j], mt_high = ", acc, "[j + ", half, "];"));
    line(absl::StrCat(t,
                      " mt_keep = mt_hi ? mt_high : mt_low, mt_send = mt_hi ? mt_low : mt_high;"));
    line(absl::StrCat(t, " mt_v = ", shuffle_xor("mt_send", t, std::to_string(mask)), ";"));
    if (arg) {
      line(absl::StrCat("int mt_low_i = ", idx, "[j], mt_high_i = ", idx, "[j + ", half, "];"));
      line(
          "int mt_keep_i = mt_hi ? mt_high_i : mt_low_i, mt_send_i = mt_hi ? mt_low_i : "
          "mt_high_i;");
      line(absl::StrCat("int mt_i = ", spelling_.shuffle_xor("mt_send_i", std::to_string(mask)),
                        ";"));
      line(absl::StrCat(acc, "[j] = mt_keep; ", idx, "[j] = mt_keep_i;"));
      line(absl::StrCat("if (mt_arg_better(", is_max, ", mt_v, mt_i, ", acc, "[j], ", idx,
                        "[j])) { ", acc, "[j] = mt_v; ", idx, "[j] = mt_i; }"));
    } else {
      line(absl::StrCat(acc, "[j] = mt_hi ? ", f, "(mt_v, mt_keep) : ", f, "(mt_keep, mt_v);"));
    }
    close();
    close();
  }
  if (along.tpw >> halvings > 1) {
    const int first = along.lane_stride << halvings;
    line(absl::StrCat("// reduce over ", along.tpw >> halvings, " lanes"));
    line("#pragma unroll");
    open(absl::StrCat("for (int m = ", first, "; m < ", along.lane_stride * along.tpw,
                      "; m <<= 1)"));
    unrolled("j", kept);
    if (arg) {
      line(absl::StrCat(t, " mt_v = ", shuffle_xor(absl::StrCat(acc, "[j]"), t, "m"), ";"));
      line(absl::StrCat("int mt_i = ", spelling_.shuffle_xor(absl::StrCat(idx, "[j]"), "m"), ";"));
      line(absl::StrCat("if (mt_arg_better(", is_max, ", mt_v, mt_i, ", acc, "[j], ", idx, "[j])) { ", acc,
                        "[j] = mt_v; ", idx, "[j] = mt_i; }"));
    } else {
      line(absl::StrCat(t, " mt_v = ", shuffle_xor(absl::StrCat(acc, "[j]"), t, "m"), ";"));
      line(absl::StrCat(acc, "[j] = (mt_lane & m) ? ", f, "(mt_v, ", acc, "[j]) : ", f, "(", acc, "[j], mt_v);"));
    }
    close();
    close();
  }
  // Gather: undo the halving levels in reverse, so every lane holds every result again.
  for (int level = halvings - 1; level >= 0; --level) {
    const int64_t half = regs >> (level + 1);
    const int mask = along.lane_stride << level;
    open("");
    line(absl::StrCat("const bool mt_hi = (mt_lane & ", mask, ") != 0;"));
    unrolled("j", half);
    line(absl::StrCat(t, " mt_mine = ", acc, "[j];"));
    line(absl::StrCat(t, " mt_v = ", shuffle_xor("mt_mine", t, std::to_string(mask)), ";"));
    line(absl::StrCat(acc, "[j] = mt_hi ? mt_v : mt_mine;"));
    line(absl::StrCat(acc, "[j + ", half, "] = mt_hi ? mt_mine : mt_v;"));
    if (arg) {
      line(absl::StrCat("int mt_mine_i = ", idx, "[j];"));
      line(absl::StrCat("int mt_i = ", spelling_.shuffle_xor("mt_mine_i", std::to_string(mask)),
                        ";"));
      line(absl::StrCat(idx, "[j] = mt_hi ? mt_i : mt_mine_i;"));
      line(absl::StrCat(idx, "[j + ", half, "] = mt_hi ? mt_mine_i : mt_i;"));
    }
    close();
    close();
  }
  if (along.wpb > 1) {
    int64_t elements = type(op.results[0]).num_elements();
    int bytes = t == "double" || t == "long long" || t == "unsigned long long" ? 8 : 4;
    int64_t values_bytes = along.wpb * elements * 8;
    need_smem(values_bytes + (arg ? along.wpb * elements * 4 : 0));
    std::vector<int64_t> strides = row_major(type(op.results[0]).shape);
    std::string lin = linear(result_layout, "j", strides);
    std::string warp = absl::StrCat("((mt_warp / ", along.warp_stride, ") % ", along.wpb, ")");
    std::string first_lane = along.tpw > 1 ? absl::StrCat("((mt_lane / ", along.lane_stride, ") % ", along.tpw, ") == 0") : "true";
    line(absl::StrCat("// reduce over ", along.wpb, " warps (", bytes, "-byte partials)"));
    barrier();
    unrolled("j", regs);
    open(absl::StrCat("if (", first_lane, ")"));
    line(absl::StrCat(smem(t), "[", warp, " * ", elements, " + ", lin, "] = ", acc, "[j];"));
    if (arg) line(absl::StrCat(smem("int", values_bytes), "[", warp, " * ", elements, " + ", lin, "] = ", idx, "[j];"));
    close();
    close();
    barrier();
    unrolled("j", regs);
    line(absl::StrCat(acc, "[j] = ", smem(t), "[", lin, "];"));
    if (arg) line(absl::StrCat(idx, "[j] = ", smem("int", values_bytes), "[", lin, "];"));
    line("#pragma unroll");
    open(absl::StrCat("for (int w = 1; w < ", along.wpb, "; ++w)"));
    std::string other = absl::StrCat(smem(t), "[w * ", elements, " + ", lin, "]");
    if (arg) {
      std::string other_index = absl::StrCat(smem("int", values_bytes), "[w * ", elements, " + ", lin, "]");
      line(absl::StrCat("if (mt_arg_better(", is_max, ", ", other, ", ", other_index, ", ", acc, "[j], ", idx,
                        "[j])) { ", acc, "[j] = ", other, "; ", idx, "[j] = ", other_index, "; }"));
    } else {
      line(absl::StrCat(acc, "[j] = ", f, "(", acc, "[j], ", other, ");"));
    }
    close();
    close();
  }
  ValueId result = op.results[0];
  declare(result, regs);
  unrolled("j", regs);
  if (arg) {
    line(absl::StrCat(name(result), "[j] = ", idx, "[j];"));
  } else {
    bool sum = op.attrs.reduce == ReduceKind::kSum;
    line(absl::StrCat(name(result), "[j] = ", sum ? round_result(element.scalar, absl::StrCat(acc, "[j]"))
                                                  : absl::StrCat(acc, "[j]"), ";"));
  }
  close();
  return absl::OkStatus();
}

absl::Status OpLowering::scan(const Op& op) {
  ValueId operand = op.operands[0];
  ValueId result = op.results[0];
  ElementType element = type(operand).element;
  if (element.pointer) return unsupported(op, "cannot scan pointers");
  if (op.attrs.reduce != ReduceKind::kSum && op.attrs.reduce != ReduceKind::kCustom) {
    return unsupported(op, "scan takes sum or a combine region");
  }
  int axis = op.attrs.axis;
  Layout layout = layout_or_default(result);
  std::string src = get(operand, layout);
  std::string t = register_type(element);
  int64_t regs = layout.num_regs();
  int64_t size = type(operand).shape[axis];
  std::vector<int64_t> strides = row_major(type(operand).shape);
  std::string f = combine_function(op, element.scalar);
  std::string x = fresh("scan");
  line(absl::StrCat(t, " ", x, "[", regs, "];"));
  copy_into(x, src, regs);
  need_smem(type(operand).num_elements() * 8);
  std::string guard = owner(layout);
  open(absl::StrCat("for (int mt_d = 1; mt_d < ", size, "; mt_d <<= 1)"));
  barrier();
  unrolled("i", regs);
  line(absl::StrCat(guard.empty() ? "" : absl::StrCat("if (", guard, ") "), smem(t), "[", linear(layout, "i", strides),
                    "] = ", x, "[i];"));
  close();
  barrier();
  unrolled("i", regs);
  line(absl::StrCat("const int c = ", coord(layout, axis, "i"), ";"));
  if (op.attrs.reverse) {
    line(absl::StrCat("if (c + mt_d < ", size, ") ", x, "[i] = ", f, "(", smem(t), "[", linear(layout, "i", strides),
                      " + mt_d * ", strides[axis], "], ", x, "[i]);"));
  } else {
    line(absl::StrCat("if (c >= mt_d) ", x, "[i] = ", f, "(", smem(t), "[", linear(layout, "i", strides), " - mt_d * ",
                      strides[axis], "], ", x, "[i]);"));
  }
  close();
  close();
  declare(result, regs);
  unrolled("i", regs);
  bool sum = op.attrs.reduce == ReduceKind::kSum;
  line(absl::StrCat(name(result), "[i] = ", sum ? round_result(element.scalar, absl::StrCat(x, "[i]")) : absl::StrCat(x, "[i]"),
                    ";"));
  close();
  return absl::OkStatus();
}

}  // namespace monotile::dsl::lower
