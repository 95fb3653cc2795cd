// Loads, stores and prefetches. A register group of `vec` elements that axis analysis proves
// contiguous and aligned moves as one access of vec * bytes (up to 16), through 32-bit words; a group
// whose address axis analysis proves constant (a scale per 16 bytes) is read once; masks proven
// all-true are dropped, masks constant over a group guard the whole group. Ordered
// (acquire/release/relaxed) accesses are per element through the vendor's spelling; scalar ones are
// made by thread 0 and shared with the block so that every thread sees one value. A prefetch is one
// hint per group (a group lies in one 16-byte chunk, so in one line), by the group's owner thread.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "dsl/lower/op_lowering.h"
#include "support/check.h"
#include "support/strings.h"

namespace monotile::dsl::lower {

std::string_view word_struct(int total_bytes) {
  switch (total_bytes) {
    case 1: return "unsigned char";
    case 2: return "unsigned short";
    case 4: return "unsigned";
    case 8: return "mt_u32x2";
    default: return "mt_u32x4";
  }
}

// Bits of element j (of `bytes` each) from the word array `words`.
std::string extract(std::string_view words, int j, int bytes) {
  if (bytes == 8) {
    return absl::StrCat("(((unsigned long long)", to_absl(words), "[", 2 * j + 1, "] << 32) | ", to_absl(words), "[",
                        2 * j, "])");
  }
  int word = j * bytes / 4;
  int shift = (j * bytes % 4) * 8;
  std::string text = absl::StrCat(to_absl(words), "[", word, "]");
  if (shift) text = absl::StrCat("(", text, " >> ", shift, ")");
  if (bytes < 4) text = absl::StrCat("(", text, " & ", bytes == 1 ? "0xffu" : "0xffffu", ")");
  return text;
}

std::string OpLowering::from_bits(ScalarType type, std::string_view bits) const {
  auto b = to_absl(bits);
  switch (type) {
    case ScalarType::kI1: return absl::StrCat("(", b, " != 0)");
    case ScalarType::kF16: return absl::StrCat("mt_f16_bits_to_f32((unsigned short)", b, ")");
    case ScalarType::kBf16: return absl::StrCat("__uint_as_float((unsigned)", b, " << 16)");
    case ScalarType::kF32: return absl::StrCat("__uint_as_float((unsigned)", b, ")");
    case ScalarType::kF64: return absl::StrCat("__longlong_as_double((long long)", b, ")");
    default: return absl::StrCat("(", memory_type(type), ")", b);
  }
}

std::string OpLowering::to_bits(ScalarType type, std::string_view value) const {
  auto v = to_absl(value);
  switch (type) {
    case ScalarType::kI1: return absl::StrCat("(unsigned)", v);
    case ScalarType::kI8:
    case ScalarType::kU8:
    case ScalarType::kMxfp4: return absl::StrCat("(unsigned)(unsigned char)", v);
    case ScalarType::kI16: return absl::StrCat("(unsigned)(unsigned short)", v);
    case ScalarType::kI32:
    case ScalarType::kU32: return absl::StrCat("(unsigned)", v);
    case ScalarType::kI64: return absl::StrCat("(unsigned long long)", v);
    case ScalarType::kF16: return absl::StrCat("(unsigned)mt_f32_to_f16_bits(", v, ")");
    case ScalarType::kBf16: return absl::StrCat("(__float_as_uint(", v, ") >> 16)");
    case ScalarType::kF32: return absl::StrCat("__float_as_uint(", v, ")");
    case ScalarType::kF64: return absl::StrCat("(unsigned long long)__double_as_longlong(", v, ")");
  }
  return std::string(value);
}

int OpLowering::vector_width(const Op& op, const Layout& layout, int bytes) {
  if (layout.rank() == 0 || op.attrs.order != MemOrder::kPlain) return 1;
  int last = layout.rank() - 1;
  const AxisInfo& ptr = state_.axis[op.operands[0]];
  int64_t vec = std::min<int64_t>({layout.dim(last).spt, ptr.contiguity[last], 16 / bytes});
  int64_t aligned = ptr.divisibility[last] / bytes;
  vec = std::min<int64_t>(vec, std::max<int64_t>(aligned, 1));
  if (op.attrs.has_mask) {
    const AxisInfo& mask = state_.axis[op.operands[op.code == OpCode::kStore ? 2 : 1]];
    if (!mask.known_true()) vec = std::min<int64_t>(vec, mask.constancy[last]);
  }
  return static_cast<int>(std::max<int64_t>(vec, 1));
}

int OpLowering::same_address_group(const Op& op, const Layout& layout) {
  if (layout.rank() == 0 || op.attrs.order != MemOrder::kPlain) return 1;
  int last = layout.rank() - 1;
  int64_t group = std::min<int64_t>(layout.dim(last).spt, state_.axis[op.operands[0]].constancy[last]);
  if (op.attrs.has_mask) {
    const AxisInfo& mask = state_.axis[op.operands[1]];
    if (!mask.known_true()) group = std::min<int64_t>(group, mask.constancy[last]);
  }
  if (op.attrs.has_other) group = std::min<int64_t>(group, state_.axis[op.operands[op.attrs.has_mask ? 2 : 1]].constancy[last]);
  return static_cast<int>(std::max<int64_t>(group, 1));
}

absl::Status OpLowering::load(const Op& op) {
  if (const StagedLoad* staged = pipelines_.staged_load(&op)) return load_staged(op, *staged, stage_read_.at(&op));
  ValueId result = op.results[0];
  ScalarType element = type(result).element.scalar;
  if (type(result).element.pointer) return unsupported(op, "loading pointers is not supported");
  int bytes = scalar_type_bytes(element);
  Layout layout = layout_or_default(result);
  int64_t regs = layout.num_regs();
  bool ordered = op.attrs.order != MemOrder::kPlain;
  if (ordered && bytes != 4 && bytes != 8) {
    return unsupported(op, absl::StrCat("an ordered load needs a 32- or 64-bit element, got ", type(result).str()));
  }
  std::string ptr = get(op.operands[0], layout);
  bool masked = op.attrs.has_mask && !state_.axis[op.operands[1]].known_true();
  std::string mask = masked ? get(op.operands[1], layout) : "";
  std::string other;
  if (op.attrs.has_other) other = get(op.operands[op.attrs.has_mask ? 2 : 1], layout);
  int vec = vector_width(op, layout, bytes);
  int total = vec * bytes;
  // A single-element access whose address is the same over a group of registers reads it once.
  int same = vec == 1 ? same_address_group(op, layout) : 1;
  std::string out = name(result);
  declare(result, regs);
  bool scalar_ordered = ordered && layout.rank() == 0;
  if (scalar_ordered) open("if (mt_tid == 0)");
  unrolled("g", regs / (vec * same));
  line(absl::StrCat("const int i = g * ", vec * same, ";"));
  if (masked) open(absl::StrCat("if (", mask, "[i])"));
  else open("");
  line(absl::StrCat("unsigned mt_w[", std::max(total / 4, 1), "];"));
  if (ordered) {
    std::string word_type = bytes == 8 ? "unsigned long long" : "unsigned";
    line(absl::StrCat(word_type, " mt_bits;"));
    line(spelling_.load_ordered(op.attrs.order, op.attrs.scope, bytes, absl::StrCat(ptr, "[i]"), "mt_bits"));
    line(absl::StrCat(out, "[i] = ", from_bits(element, "mt_bits"), ";"));
  } else {
    std::string hinted = spelling_.load_hinted(op.attrs.cache, op.attrs.evict, op.attrs.l2_fetch, total, absl::StrCat(ptr, "[i]"), "mt_w");
    if (!hinted.empty()) {
      line(hinted);
    } else if (total >= 8) {
      line(absl::StrCat(to_absl(word_struct(total)), " mt_t = *(const ", to_absl(word_struct(total)), "*)", ptr, "[i];"));
      for (int w = 0; w < total / 4; ++w) line(absl::StrCat("mt_w[", w, "] = mt_t.v[", w, "];"));
    } else {
      line(absl::StrCat("mt_w[0] = *(const ", to_absl(word_struct(total)), "*)", ptr, "[i];"));
    }
    for (int j = 0; j < vec; ++j) {
      line(absl::StrCat(out, "[i + ", j, "] = ", from_bits(element, extract("mt_w", j, bytes)), ";"));
    }
    for (int j = 1; j < same; ++j) line(absl::StrCat(out, "[i + ", j, "] = ", out, "[i];"));
  }
  close();
  if (masked) {
    open("else");
    for (int j = 0; j < vec * same; ++j) {
      line(absl::StrCat(out, "[i + ", j, "] = ",
                        other.empty() ? absl::StrCat("(", reg_type(result), ")0") : absl::StrCat(other, "[i + ", j, "]"),
                        ";"));
    }
    close();
  }
  close();
  if (scalar_ordered) {
    close();
    broadcast_from_thread0(absl::StrCat(out, "[0]"), reg_type(result));
  }
  return absl::OkStatus();
}

absl::Status OpLowering::store(const Op& op) {
  ValueId value = op.operands[1];
  ScalarType element = type(value).element.scalar;
  if (type(value).element.pointer) return unsupported(op, "storing pointers is not supported");
  int bytes = scalar_type_bytes(element);
  bool ordered = op.attrs.order != MemOrder::kPlain;
  if (ordered && bytes != 4 && bytes != 8) {
    return unsupported(op, absl::StrCat("an ordered store needs a 32- or 64-bit element, got ", type(value).str()));
  }
  Layout layout = layout_or_default(value);
  int64_t regs = layout.num_regs();
  std::string ptr = get(op.operands[0], layout);
  std::string data = get(value, layout);
  bool masked = op.attrs.has_mask && !state_.axis[op.operands[2]].known_true();
  std::string mask = masked ? get(op.operands[2], layout) : "";
  int vec = vector_width(op, layout, bytes);
  int total = vec * bytes;
  std::string guard = owner(layout);
  if (masked) guard = guard.empty() ? absl::StrCat(mask, "[i]") : absl::StrCat(guard, " && ", mask, "[i]");
  unrolled("g", regs / vec);
  line(absl::StrCat("const int i = g * ", vec, ";"));
  open(guard.empty() ? "" : absl::StrCat("if (", guard, ")"));
  if (ordered) {
    line(spelling_.store_ordered(op.attrs.order, op.attrs.scope, bytes, absl::StrCat(ptr, "[i]"),
                                 to_bits(element, absl::StrCat(data, "[i]"))));
  } else if (total >= 4) {
    int words = total / 4;
    line(absl::StrCat("unsigned mt_w[", words, "];"));
    if (bytes == 8) {
      for (int j = 0; j < vec; ++j) {
        line(absl::StrCat("{ unsigned long long mt_b = ", to_bits(element, absl::StrCat(data, "[i + ", j, "]")),
                          "; mt_w[", 2 * j, "] = (unsigned)mt_b; mt_w[", 2 * j + 1, "] = (unsigned)(mt_b >> 32); }"));
      }
    } else {
      int per_word = 4 / bytes;
      for (int w = 0; w < words; ++w) {
        std::string word;
        for (int k = 0; k < per_word; ++k) {
          std::string bits = to_bits(element, absl::StrCat(data, "[i + ", w * per_word + k, "]"));
          if (bytes < 4) bits = absl::StrCat("((", bits, " & ", bytes == 1 ? "0xffu" : "0xffffu", ") << ", 8 * bytes * k, ")");
          absl::StrAppend(&word, k ? " | " : "", bits);
        }
        line(absl::StrCat("mt_w[", w, "] = ", word, ";"));
      }
    }
    std::string hinted = spelling_.store_hinted(op.attrs.cache, op.attrs.evict, total, absl::StrCat(ptr, "[i]"), "mt_w");
    if (!hinted.empty()) {
      line(hinted);
    } else if (total >= 8) {
      line(absl::StrCat(to_absl(word_struct(total)), " mt_t;"));
      for (int w = 0; w < words; ++w) line(absl::StrCat("mt_t.v[", w, "] = mt_w[", w, "];"));
      line(absl::StrCat("*(", to_absl(word_struct(total)), "*)", ptr, "[i] = mt_t;"));
    } else {
      line(absl::StrCat("*(unsigned*)", ptr, "[i] = mt_w[0];"));
    }
  } else {
    // 1 or 2 bytes: one element, or two 1-byte elements packed into a 16-bit word.
    std::string word;
    for (int j = 0; j < vec; ++j) {
      absl::StrAppend(&word, j ? " | " : "", "((", to_bits(element, absl::StrCat(data, "[i + ", j, "]")), " & ",
                      bytes == 1 ? "0xffu" : "0xffffu", ") << ", 8 * bytes * j, ")");
    }
    line(absl::StrCat("*(", to_absl(word_struct(total)), "*)", ptr, "[i] = (", to_absl(word_struct(total)), ")(", word,
                      ");"));
  }
  close();
  close();
  return absl::OkStatus();
}

absl::Status OpLowering::prefetch(const Op& op) {
  if (spelling_.prefetch_l2 == nullptr) {
    line(absl::StrCat("// prefetch dropped: ", to_absl(spelling_.vendor),
                      " has no L2 prefetch instruction"));
    return absl::OkStatus();
  }
  ValueId ptr = op.operands[0];
  Layout layout = layout_or_default(ptr);
  int64_t regs = layout.num_regs();
  std::string address = get(ptr, layout);
  bool masked = op.attrs.has_mask && !state_.axis[op.operands[1]].known_true();
  std::string mask = masked ? get(op.operands[1], layout) : "";
  int vec = vector_width(op, layout, scalar_type_bytes(type(ptr).element.scalar));
  std::string guard = layout.rank() == 0 ? "mt_tid == 0" : owner(layout);
  if (masked) {
    guard = guard.empty() ? absl::StrCat(mask, "[i]") : absl::StrCat(guard, " && ", mask, "[i]");
  }
  unrolled("g", regs / vec);
  line(absl::StrCat("const int i = g * ", vec, ";"));
  open(guard.empty() ? "" : absl::StrCat("if (", guard, ")"));
  line(spelling_.prefetch_l2(absl::StrCat(address, "[i]")));
  close();
  close();
  return absl::OkStatus();
}

}  // namespace monotile::dsl::lower
