// Reductions and scans along an axis. A reduction combines a thread's registers along the axis, then
// the lanes along it with xor shuffles, then the warps along it through shared memory; the result is
// in the slice layout (replicated over the reduced lanes and warps), so broadcasting it back over the
// parent tile costs nothing. f16/bf16 sums accumulate in f32 and round once. Scans run Hillis-Steele
// steps through shared memory (log2(n) steps), keeping the combine's left-to-right order.
#include "absl/strings/str_cat.h"
#include "dsl/lower/op_lowering.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

bool narrow(const std::string& type) {
  return type == "bool" || type == "signed char" || type == "unsigned char" || type == "short" ||
         type == "unsigned short";
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
  auto shuffled = [&](const std::string& value, const std::string& type, const std::string& mask) {
    if (narrow(type)) return absl::StrCat("(", type, ")", spelling_.shuffle_xor(absl::StrCat("(int)", value), mask));
    return spelling_.shuffle_xor(value, mask);
  };
  if (along.tpw > 1) {
    line(absl::StrCat("// reduce over ", along.tpw, " lanes"));
    line("#pragma unroll");
    open(absl::StrCat("for (int m = ", along.lane_stride, "; m < ", along.lane_stride * along.tpw, "; m <<= 1)"));
    unrolled("j", regs);
    if (arg) {
      line(absl::StrCat(t, " mt_v = ", shuffled(absl::StrCat(acc, "[j]"), t, "m"), ";"));
      line(absl::StrCat("int mt_i = ", spelling_.shuffle_xor(absl::StrCat(idx, "[j]"), "m"), ";"));
      line(absl::StrCat("if (mt_arg_better(", is_max, ", mt_v, mt_i, ", acc, "[j], ", idx, "[j])) { ", acc,
                        "[j] = mt_v; ", idx, "[j] = mt_i; }"));
    } else {
      line(absl::StrCat(t, " mt_v = ", shuffled(absl::StrCat(acc, "[j]"), t, "m"), ";"));
      line(absl::StrCat(acc, "[j] = (mt_lane & m) ? ", f, "(mt_v, ", acc, "[j]) : ", f, "(", acc, "[j], mt_v);"));
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
