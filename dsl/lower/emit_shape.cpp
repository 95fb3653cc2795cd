// Shape ops that move elements between threads (reshape, trans, join, split, cat), MXFP4 dequant and
// mxfp4_word_pairs where its words' threads do not hold its results:
// the sources go to shared memory in row-major order, then each result register gathers its element
// by index arithmetic on its coordinates. A trans whose layouts keep every element in its thread
// only renames registers. (broadcast and expand_dims never move data: op_lowering.cpp.)
#include "absl/strings/str_cat.h"
#include "dsl/lower/op_lowering.h"
#include "support/check.h"
#include "support/strings.h"

namespace monotile::dsl::lower {

namespace {

// A bf16 held as the f32 whose high half it is: the low or the high half of `word`.
std::string pair_half(const std::string& high, const std::string& word) {
  return absl::StrCat("__uint_as_float((", high, ") ? (", word, " & 0xffff0000u) : (", word, " << 16))");
}

}  // namespace

absl::Status OpLowering::shape_op(const Op& op) {
  const std::vector<ValueId>& sources = op.operands;
  if (op.code == OpCode::kTrans && state_.layouts[sources[0]] &&
      layout_or_default(op.results[0]) == state_.layouts[sources[0]]->permuted(op.attrs.ints)) {
    return trans_in_registers(op);
  }
  std::string t = reg_type(sources[0]);
  for (ValueId source : sources) {
    // MXFP4's packed words or bytes come with u8 codes (stored as the words' type).
    const bool mxfp4 = op.code == OpCode::kDequantMxfp4 || op.code == OpCode::kMxfp4WordPairs;
    if (!mxfp4 && reg_type(source) != t) return unsupported(op, "operands differ in type");
  }
  int elem_bytes = t == "double" || t == "long long" || t.ends_with("*") ? 8 : 4;
  if (t == "bool" || t == "signed char" || t == "unsigned char") elem_bytes = 1;
  if (t == "short") elem_bytes = 2;
  std::vector<int64_t> offsets;
  int64_t total = 0;
  for (ValueId source : sources) {
    offsets.push_back(total);
    total += type(source).num_elements();
  }
  need_smem(total * elem_bytes);
  // Every source is in its registers before shared memory is written (a conversion uses it too).
  std::vector<Layout> layouts;
  std::vector<std::string> arrays;
  for (ValueId source : sources) {
    layouts.push_back(layout_or_default(source));
    arrays.push_back(get(source, layouts.back()));
  }
  line(absl::StrCat("// ", to_absl(op_name(op.code)), " through shared memory"));
  barrier();
  for (size_t s = 0; s < sources.size(); ++s) {
    const Layout& layout = layouts[s];
    const std::string& src = arrays[s];
    std::string guard = owner(layout);
    unrolled("i", layout.num_regs());
    line(absl::StrCat(guard.empty() ? "" : absl::StrCat("if (", guard, ") "), smem(t), "[", offsets[s], " + ",
                      linear(layout, "i", row_major(type(sources[s]).shape)), "] = ", src, "[i];"));
    close();
  }
  barrier();
  for (size_t r = 0; r < op.results.size(); ++r) {
    ValueId result = op.results[r];
    const std::vector<int64_t>& shape = type(result).shape;
    Layout layout = layout_or_default(result);
    int rank = layout.rank();
    declare(result, layout.num_regs());
    unrolled("i", layout.num_regs());
    std::vector<std::string> c;
    for (int d = 0; d < rank; ++d) {
      c.push_back(absl::StrCat("c", d));
      line(absl::StrCat("const int c", d, " = ", coord(layout, d, "i"), ";"));
    }
    std::string index;
    auto linear_of = [&](const std::vector<int64_t>& of_shape, const std::vector<std::string>& coords) {
      std::vector<int64_t> strides = row_major(of_shape);
      std::string text = "0";
      for (size_t d = 0; d < coords.size(); ++d) absl::StrAppend(&text, " + ", coords[d], " * ", strides[d]);
      return text;
    };
    switch (op.code) {
      case OpCode::kReshape: index = linear_of(shape, c); break;
      case OpCode::kTrans: {
        std::vector<int64_t> src_strides = row_major(type(sources[0]).shape);
        // Built in a fresh string: assigning "0" to `index` trips GCC 12's false -Wrestrict at -O3.
        std::string text = "0";
        for (int d = 0; d < rank; ++d) absl::StrAppend(&text, " + c", d, " * ", src_strides[op.attrs.ints.at(d)]);
        index = std::move(text);
        break;
      }
      case OpCode::kJoin: {
        std::vector<std::string> prefix(c.begin(), c.end() - 1);
        index = absl::StrCat("c", rank - 1, " * ", offsets[1], " + ", linear_of(type(sources[0]).shape, prefix));
        break;
      }
      case OpCode::kSplit: {
        std::vector<std::string> full = c;
        full.push_back(std::to_string(r));
        index = linear_of(type(sources[0]).shape, full);
        break;
      }
      case OpCode::kCat: {
        int axis = op.attrs.axis;
        int64_t first = type(sources[0]).shape[axis];
        std::vector<std::string> shifted = c;
        shifted[axis] = absl::StrCat("(c", axis, " - ", first, ")");
        index = absl::StrCat("c", axis, " < ", first, " ? ", linear_of(type(sources[0]).shape, c), " : ", offsets[1],
                             " + ", linear_of(type(sources[1]).shape, shifted));
        break;
      }
      case OpCode::kUnpackBf16: {
        std::vector<std::string> word = c;
        word.back() = absl::StrCat("(", c.back(), " / 2)");
        line(absl::StrCat("const unsigned mt_word = (unsigned)", smem(t), "[", linear_of(type(sources[0]).shape, word),
                          "];"));
        line(absl::StrCat(name(result), "[i] = ", pair_half(absl::StrCat(c.back(), " & 1"), "mt_word"), ";"));
        close();
        continue;
      }
      case OpCode::kMxfp4WordPairs: {
        std::vector<std::string> word = c;
        word.back() = absl::StrCat("(", c.back(), " / 4)");
        const std::string at = linear_of(type(sources[0]).shape, word);
        line(absl::StrCat(name(result), "[i] = mt_mxfp4_word_pair((unsigned)", smem(t), "[", at, "], ", c.back(),
                          " & 3, (unsigned)", smem(t), "[", offsets[1], " + ", at, "] & 255u, ", op.attrs.int_value,
                          ", ", op.attrs.ints.empty() ? "0u" : "1u", ");"));
        close();
        continue;
      }
      case OpCode::kDequantMxfp4: {
        int64_t n = shape.back();
        if (n % 32 != 0) return unsupported(op, absl::StrCat("the last dim must be a multiple of 32, got ", type(result).str()));
        std::vector<int64_t> prefix_shape(shape.begin(), shape.end() - 1);
        std::vector<std::string> prefix(c.begin(), c.end() - 1);
        std::string p = absl::StrCat("(", linear_of(prefix_shape, prefix), ")");
        std::string last = absl::StrCat("c", rank - 1);
        line(absl::StrCat("const unsigned mt_byte = ", smem(t), "[", p, " * ", n / 2, " + ", last, " / 2];"));
        line(absl::StrCat("const unsigned mt_scale = ", smem(t), "[", offsets[1], " + ", p, " * ", n / 32, " + ", last,
                          " / 32];"));
        std::string value = absl::StrCat("mt_mxfp4((", last, " & 1) ? (mt_byte >> 4) : (mt_byte & 15u), mt_scale)");
        ScalarType out = type(result).element.scalar;
        if (out == ScalarType::kBf16) value = absl::StrCat("mt_round_bf16(", value, ")");
        if (out == ScalarType::kF16) value = absl::StrCat("mt_round_f16(", value, ")");
        if (out == ScalarType::kF64) value = absl::StrCat("(double)", value);
        line(absl::StrCat(name(result), "[i] = ", value, ";"));
        close();
        continue;
      }
      default: MT_CHECK(false, "not a shape op");
    }
    line(absl::StrCat(name(result), "[i] = ", smem(t), "[", index, "];"));
    close();
  }
  return absl::OkStatus();
}

// Where the result's layout is the words' pairs() (the layout assignment's choice wherever it can),
// each word's halves are the thread's registers 2i and 2i + 1; elsewhere through shared memory.
absl::Status OpLowering::unpack_bf16(const Op& op) {
  const ValueId words = op.operands[0];
  const Layout layout = layout_or_default(op.results[0]);
  if (!state_.layouts[words] || layout != state_.layouts[words]->pairs()) return shape_op(op);
  const std::string source = get(words, *state_.layouts[words]);
  line("// unpack_bf16 in registers: each word's halves stay in its thread");
  declare(op.results[0], layout.num_regs());
  unrolled("i", layout.num_regs());
  line(absl::StrCat(name(op.results[0]), "[i] = ",
                    pair_half("i & 1", absl::StrCat("(unsigned)", source, "[i / 2]")), ";"));
  close();
  return absl::OkStatus();
}

absl::Status OpLowering::mxfp4_word_pairs(const Op& op) {
  const ValueId words = op.operands[0], codes = op.operands[1];
  const Layout layout = layout_or_default(op.results[0]);
  const bool in_registers = state_.layouts[words] && state_.layouts[codes] &&
                            layout == state_.layouts[words]->widened(4) && *state_.layouts[codes] == *state_.layouts[words];
  if (!in_registers) return shape_op(op);
  const std::string source = get(words, *state_.layouts[words]);
  const std::string code = get(codes, *state_.layouts[codes]);
  line("// mxfp4_word_pairs in registers: each packed word's four pairs stay in its thread");
  declare(op.results[0], layout.num_regs());
  unrolled("i", layout.num_regs());
  line(absl::StrCat(name(op.results[0]), "[i] = mt_mxfp4_word_pair((unsigned)", source, "[i / 4], i & 3, (unsigned)",
                    code, "[i / 4] & 255u, ", op.attrs.int_value, ", ", op.attrs.ints.empty() ? "0u" : "1u", ");"));
  close();
  return absl::OkStatus();
}

// Result dim d is the source's dim perm[d] with the same per-dim register: register i of the result
// is the source's register sum_d k_d * source_stride(perm[d]), k_d its position along dim d.
absl::Status OpLowering::trans_in_registers(const Op& op) {
  const Layout source_layout = *state_.layouts[op.operands[0]];
  const Layout layout = layout_or_default(op.results[0]);
  std::string source = get(op.operands[0], source_layout);
  std::string index = "0";
  for (int d = 0; d < layout.rank(); ++d) {
    if (layout.dim(d).regs() == 1) continue;
    absl::StrAppend(&index, " + ((i / ", layout.reg_stride(d), ") % ", layout.dim(d).regs(), ") * ",
                    source_layout.reg_stride(static_cast<int>(op.attrs.ints.at(d))));
  }
  line("// trans in registers: the same elements in each thread, reordered");
  declare(op.results[0], layout.num_regs());
  unrolled("i", layout.num_regs());
  line(absl::StrCat(name(op.results[0]), "[i] = ", source, "[", index, "];"));
  close();
  return absl::OkStatus();
}

}  // namespace monotile::dsl::lower
