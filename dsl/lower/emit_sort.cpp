// sort and topk: a bitonic network in shared memory over each line along the axis, padded to a
// power of two (padding sorts last). The order is the interpreter's: by value with NaN greatest
// (first when descending, last when ascending), ties to the lower index, so results match exactly.
#include "absl/strings/str_cat.h"
#include "dsl/lower/op_lowering.h"
#include "support/check.h"
#include "support/strings.h"

namespace monotile::dsl::lower {

absl::Status OpLowering::sort(const Op& op) {
  bool topk = op.code == OpCode::kTopK;
  ValueId operand = op.operands[0];
  ElementType element = type(operand).element;
  if (element.pointer) return unsupported(op, "cannot sort pointers");
  const std::vector<int64_t>& shape = type(operand).shape;
  int axis = topk ? static_cast<int>(shape.size()) - 1 : op.attrs.axis;
  int64_t size = shape[axis];
  int64_t padded = 1;
  while (padded < size) padded <<= 1;
  std::vector<int64_t> padded_shape = shape;
  padded_shape[axis] = padded;
  std::vector<int64_t> strides = row_major(padded_shape);
  int64_t total = 1;
  for (int64_t dim : padded_shape) total *= dim;
  std::string t = register_type(element);
  int64_t index_offset = total * 8;
  need_smem(index_offset + total * 4);
  std::string keys = smem(t);
  std::string indices = smem("int", index_offset);
  Layout in_layout = layout_or_default(operand);
  std::string src = get(operand, in_layout);
  line(absl::StrCat("// bitonic ", topk ? "topk" : "sort", " of ", size, " (padded to ", padded, ") along axis ", axis));
  barrier();
  line(absl::StrCat("for (int e = mt_tid; e < ", total, "; e += ", block_threads_, ") ", indices, "[e] = -1;"));
  barrier();
  unrolled("i", in_layout.num_regs());
  std::string guard = owner(in_layout);
  open(guard.empty() ? "" : absl::StrCat("if (", guard, ")"));
  line(absl::StrCat("const int e = ", linear(in_layout, "i", strides), ";"));
  line(absl::StrCat(keys, "[e] = ", src, "[i];"));
  line(absl::StrCat(indices, "[e] = ", coord(in_layout, axis, "i"), ";"));
  close();
  close();
  barrier();
  bool descending = op.attrs.descending;
  open(absl::StrCat("for (int k = 2; k <= ", padded, "; k <<= 1)"));
  open("for (int j = k >> 1; j > 0; j >>= 1)");
  open(absl::StrCat("for (int e = mt_tid; e < ", total, "; e += ", block_threads_, ")"));
  line(absl::StrCat("const int pos = (e / ", strides[axis], ") % ", padded, ";"));
  line("const int partner = pos ^ j;");
  open("if (partner > pos)");
  line(absl::StrCat("const int e2 = e + (partner - pos) * ", strides[axis], ";"));
  line(absl::StrCat("const bool swap = (pos & k) == 0 ? mt_sort_before(", descending, ", ", keys, "[e2], ", indices,
                    "[e2], ", keys, "[e], ", indices, "[e]) : mt_sort_before(", descending, ", ", keys, "[e], ", indices,
                    "[e], ", keys, "[e2], ", indices, "[e2]);"));
  open("if (swap)");
  line(absl::StrCat(t, " mt_k = ", keys, "[e]; ", keys, "[e] = ", keys, "[e2]; ", keys, "[e2] = mt_k;"));
  line(absl::StrCat("int mt_x = ", indices, "[e]; ", indices, "[e] = ", indices, "[e2]; ", indices, "[e2] = mt_x;"));
  close();
  close();
  close();
  barrier();
  close();
  close();
  Layout out_layout = layout_or_default(op.results[0]);
  int64_t regs = out_layout.num_regs();
  declare(op.results[0], regs);
  declare(op.results[1], regs);
  unrolled("i", regs);
  line(absl::StrCat("const int e = ", linear(out_layout, "i", strides), ";"));
  line(absl::StrCat(name(op.results[0]), "[i] = ", keys, "[e];"));
  line(absl::StrCat(name(op.results[1]), "[i] = ", indices, "[e];"));
  close();
  return absl::OkStatus();
}

}  // namespace monotile::dsl::lower
