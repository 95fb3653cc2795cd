// sort and topk: a bitonic network over each line along the axis, padded to a power of two (padding
// sorts last). The order is the interpreter's: by value with NaN greatest (first when descending,
// last when ascending), ties to the lower index, so results match exactly.
//
// Keys of up to 32 bits move as one 64-bit word each, their order bits above their index
// (mt_sort_word), so that a compare-exchange is one unsigned compare and a select: K3's router
// top-k, one warp's chain of dependent steps, took about 130 instructions a step for 4 keys with a
// value, NaN and index test per compare. The values stay in shared memory where they came in and
// are read back by index at the end. 64-bit keys move with a separate index.
//
// The lines go through shared memory once to reach a thread-contiguous order (any input layout, any
// axis): thread t then holds elements [t * per, (t + 1) * per) of the padded tiles in registers,
// and each compare-exchange step runs where its partner lives: in the thread's own registers, in
// another lane (one xor shuffle a register) or, only for partners in another warp, through shared
// memory. A 1024-wide topk on 256 threads is 55 steps: 49 in registers and shuffles, 6 through
// shared memory (a network wholly in shared memory put a barrier after each of the 55 and took
// about 60 us on an H200, where K2's router waits for it). Tiles too small to fill a warp, or whose
// lines do not split evenly over the threads, run the whole network in shared memory.
#include "absl/strings/str_cat.h"
#include "dsl/lower/op_lowering.h"
#include "dsl/shape_rules.h"
#include "support/check.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

constexpr int64_t kMaxRegistersPerThread = 32;

}  // namespace

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
  const int64_t stride = strides[axis];  // elements between neighbours along the axis
  int64_t total = 1;
  for (int64_t dim : padded_shape) total *= dim;
  std::string t = register_type(element);
  const bool descending = op.attrs.descending;
  const std::string order = descending ? "true" : "false";
  // Keys of up to 32 bits travel with their index as one 64-bit word (mt_sort_word); 64-bit keys as
  // a value and an index, compared by mt_sort_before.
  const bool packed = scalar_type_bits(element.scalar) <= 32;
  const int64_t index_offset = total * 8;
  need_smem(index_offset + total * (packed ? 8 : 4));
  std::string keys = smem(t);  // the values as they came (packed) or as they move
  std::string indices = smem(packed ? "unsigned long long" : "int", index_offset);

  // Registers: the threads that hold elements (whole warps), `per` contiguous elements each. The
  // xor of a partner's position stays inside the line when the axis stride is a power of two.
  const int warp = state_.target.warp_size();
  const int64_t active = std::min<int64_t>(total, block_threads_);
  const int64_t per = total / active;
  const bool in_registers = total >= warp && total % active == 0 && is_power_of_two(per) &&
                            is_power_of_two(stride) && per <= kMaxRegistersPerThread &&
                            active % warp == 0;

  Layout in_layout = layout_or_default(operand);
  std::string src = get(operand, in_layout);
  line(absl::StrCat("// bitonic ", topk ? "topk" : "sort", " of ", size, " (padded to ", padded,
                    ") along axis ", axis,
                    in_registers ? absl::StrCat(": ", per, " elements a thread in registers") : "",
                    packed ? ", each with its index in one word" : ""));
  barrier();
  line(absl::StrCat("for (int e = mt_tid; e < ", total, "; e += ", block_threads_, ") ", indices,
                    packed ? "[e] = 0;" : "[e] = -1;"));
  barrier();
  unrolled("i", in_layout.num_regs());
  std::string guard = owner(in_layout);
  open(guard.empty() ? "" : absl::StrCat("if (", guard, ")"));
  line(absl::StrCat("const int e = ", linear(in_layout, "i", strides), ";"));
  line(absl::StrCat(keys, "[e] = ", src, "[i];"));
  const std::string index = coord(in_layout, axis, "i");
  line(packed ? absl::StrCat(indices, "[e] = mt_sort_word(", order, ", ", src, "[i], ", index, ", ",
                             padded, ");")
              : absl::StrCat(indices, "[e] = ", index, ";"));
  close();
  close();
  barrier();
  if (in_registers) {
    bitonic_in_registers({.key_type = t,
                          .keys = keys,
                          .indices = indices,
                          .order = order,
                          .packed = packed,
                          .padded = padded,
                          .stride = stride,
                          .per = per,
                          .active = active});
  } else {
    open(absl::StrCat("for (int k = 2; k <= ", padded, "; k <<= 1)"));
    open("for (int j = k >> 1; j > 0; j >>= 1)");
    open(absl::StrCat("for (int e = mt_tid; e < ", total, "; e += ", block_threads_, ")"));
    line(absl::StrCat("const int pos = (e / ", stride, ") % ", padded, ";"));
    line("const int partner = pos ^ j;");
    open("if (partner > pos)");
    line(absl::StrCat("const int e2 = e + (partner - pos) * ", stride, ";"));
    line(packed ? absl::StrCat("mt_bitonic_pair_word((pos & k) == 0, ", indices, "[e], ", indices,
                               "[e2]);")
                : absl::StrCat("mt_bitonic_pair(", order, ", (pos & k) == 0, ", keys, "[e], ",
                               indices, "[e], ", keys, "[e2], ", indices, "[e2]);"));
    close();
    close();
    barrier();
    close();
    close();
  }
  Layout out_layout = layout_or_default(op.results[0]);
  int64_t regs = out_layout.num_regs();
  declare(op.results[0], regs);
  declare(op.results[1], regs);
  unrolled("i", regs);
  line(absl::StrCat("const int e = ", linear(out_layout, "i", strides), ";"));
  if (packed) {
    // The word gives the index; the value is read where it came in, at that index of its line.
    line(absl::StrCat("const unsigned long long mt_w = ", indices, "[e];"));
    line("const bool mt_real = (mt_w & 0x80000000ull) != 0;");
    line(absl::StrCat("const int mt_at = mt_real ? ", padded - 1,
                      " - (int)(mt_w & 0x7fffffffull) : -1;"));
    line(absl::StrCat(name(op.results[0]), "[i] = ", keys, "[mt_real ? e + (mt_at - (e / ", stride,
                      ") % ", padded, ") * ", stride, " : e];"));
    line(absl::StrCat(name(op.results[1]), "[i] = mt_at;"));
  } else {
    line(absl::StrCat(name(op.results[0]), "[i] = ", keys, "[e];"));
    line(absl::StrCat(name(op.results[1]), "[i] = ", indices, "[e];"));
  }
  close();
  return absl::OkStatus();
}

void OpLowering::bitonic_in_registers(const BitonicNetwork& n) {
  const int warp = state_.target.warp_size();
  const std::string k_regs = fresh("sort_k"), i_regs = fresh("sort_i");
  // Packed: the words alone move (their keys and indices stay behind in shared memory).
  const std::string word_type = n.packed ? "unsigned long long" : n.key_type;
  const bool all_threads = n.active == block_threads_;
  const std::string guard = all_threads ? "" : absl::StrCat("if (mt_tid < ", n.active, ")");
  line(absl::StrCat(word_type, " ", k_regs, "[", n.per, "];"));
  if (!n.packed) line(absl::StrCat("int ", i_regs, "[", n.per, "];"));
  auto element = [&](std::string_view r) {
    return absl::StrCat("mt_tid * ", n.per, " + ", to_absl(r));
  };
  auto position = [&](std::string_view r) {
    const std::string along = n.stride == 1 ? absl::StrCat("(", element(r), ")")
                                            : absl::StrCat("(", element(r), ") / ", n.stride);
    return absl::StrCat("const int pos = ", along, " % ", n.padded, ";");
  };
  // The words' home in shared memory: the packed words, or the keys beside their indices.
  const std::string words = n.packed ? n.indices : n.keys;
  auto exchange_with_memory = [&](bool to_memory) {
    open(guard);
    unrolled("r", n.per);
    std::string at = absl::StrCat("[", element("r"), "]");
    std::string moves = to_memory ? absl::StrCat(words, at, " = ", k_regs, "[r];")
                                  : absl::StrCat(k_regs, "[r] = ", words, at, ";");
    if (!n.packed) {
      absl::StrAppend(&moves, " ",
                      to_memory ? absl::StrCat(n.indices, at, " = ", i_regs, "[r];")
                                : absl::StrCat(i_regs, "[r] = ", n.indices, at, ";"));
    }
    line(moves);
    close();
    close();
  };
  exchange_with_memory(false);
  // The steps run as loops (not unrolled: 55 unrolled steps cost gfx90a's K2 over 300 spilled
  // registers); a step's case is uniform across the block.
  const std::string take_first = "((pos & mt_j) == 0) == ((pos & mt_k) == 0)";
  auto keep = [&](std::string_view theirs, std::string_view theirs_index) {
    line(n.packed
             ? absl::StrCat("mt_bitonic_keep_word(", take_first, ", ", k_regs, "[r], ",
                            to_absl(theirs), ");")
             : absl::StrCat("mt_bitonic_keep(", n.order, ", ", take_first, ", ", k_regs, "[r], ",
                            i_regs, "[r], ", to_absl(theirs), ", ", to_absl(theirs_index), ");"));
  };
  line("#pragma unroll 1");
  open(absl::StrCat("for (int mt_k = 2; mt_k <= ", n.padded, "; mt_k <<= 1)"));
  line("#pragma unroll 1");
  open("for (int mt_j = mt_k >> 1; mt_j > 0; mt_j >>= 1)");
  line(absl::StrCat("const int mt_partner = mt_j * ", n.stride,
                    ";  // element distance to the partner"));
  open(absl::StrCat("if (mt_partner >= ", n.per * warp, ")"));  // in another warp
  line(absl::StrCat(to_absl(spelling_.barrier), ";"));
  exchange_with_memory(true);
  line(absl::StrCat(to_absl(spelling_.barrier), ";"));
  open(guard);
  unrolled("r", n.per);
  line(position("r"));
  line(absl::StrCat("const int e2 = (", element("r"), ") ^ mt_partner;"));
  keep(absl::StrCat(words, "[e2]"), absl::StrCat(n.indices, "[e2]"));
  close();
  close();
  close("}");
  if (n.per > 1) {
    open(absl::StrCat("else if (mt_partner >= ", n.per, ")"));  // in another lane
  } else {
    open("else");
  }
  open(guard);
  unrolled("r", n.per);
  line(position("r"));
  const std::string lane_mask = absl::StrCat("mt_partner / ", n.per);
  line(absl::StrCat("const ", word_type, " mt_theirs = ",
                    shuffle_xor(absl::StrCat(k_regs, "[r]"), word_type, lane_mask), ";"));
  if (!n.packed) {
    line(absl::StrCat("const int mt_theirs_i = ",
                      shuffle_xor(absl::StrCat(i_regs, "[r]"), "int", lane_mask), ";"));
  }
  keep("mt_theirs", "mt_theirs_i");
  close();
  close();
  close("}");
  // In the thread's own registers: one branch per distance, so that register indices stay
  // constants.
  for (int64_t partner = 1; partner < n.per; partner <<= 1) {
    open(absl::StrCat("else if (mt_partner == ", partner, ")"));
    open(guard);
    unrolled("r", n.per);
    open(absl::StrCat("if ((r & ", partner, ") == 0)"));
    line(position("r"));
    line(n.packed ? absl::StrCat("mt_bitonic_pair_word((pos & mt_k) == 0, ", k_regs, "[r], ",
                                 k_regs, "[r ^ ", partner, "]);")
                  : absl::StrCat("mt_bitonic_pair(", n.order, ", (pos & mt_k) == 0, ", k_regs,
                                 "[r], ", i_regs, "[r], ", k_regs, "[r ^ ", partner, "], ", i_regs,
                                 "[r ^ ", partner, "]);"));
    close();
    close();
    close();
    close();
  }
  close();
  close();
  barrier();
  exchange_with_memory(true);
  barrier();
}

}  // namespace monotile::dsl::lower
