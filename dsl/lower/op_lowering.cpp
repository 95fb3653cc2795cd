// The op-lowering pass's core: register arrays, layouts in the preamble, lazy rematerialization,
// layout conversion through shared memory, and the dispatch to the op families.
#include "dsl/lower/op_lowering.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "dsl/lower/layout_assignment.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

int register_bytes(ElementType type) {
  if (type.pointer) return 8;
  switch (type.scalar) {
    case ScalarType::kF16:
    case ScalarType::kBf16: return 4;  // held in f32 registers
    default: return scalar_type_bytes(type.scalar);
  }
}

void index_producers(const Block& block, std::map<ValueId, const Op*>& producers) {
  for (const Op& op : block.ops) {
    for (ValueId result : op.results) producers[result] = &op;
    for (const Block& region : op.regions) index_producers(region, producers);
  }
}

std::string escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string memory_type(ScalarType type) {
  switch (type) {
    case ScalarType::kI1: return "unsigned char";
    case ScalarType::kI8: return "signed char";
    case ScalarType::kU8:
    case ScalarType::kMxfp4: return "unsigned char";
    case ScalarType::kI16: return "short";
    case ScalarType::kI32: return "int";
    case ScalarType::kU32: return "unsigned";
    case ScalarType::kI64: return "long long";
    case ScalarType::kF16: return "mt_f16";
    case ScalarType::kBf16: return "mt_bf16";
    case ScalarType::kF32: return "float";
    case ScalarType::kF64: return "double";
  }
  return "int";
}

std::string register_type(ElementType type) {
  if (type.pointer) return memory_type(type.scalar) + "*";
  switch (type.scalar) {
    case ScalarType::kI1: return "bool";
    case ScalarType::kF16:
    case ScalarType::kBf16: return "float";
    default: return memory_type(type.scalar);
  }
}

OpLowering::OpLowering(const LoweringState& state)
    : state_(state),
      spelling_(spelling_for(state.target)),
      block_threads_(state.program.options.num_warps * state.target.warp_size()) {
  index_producers(state_.program.body, producers_);
  pipelines_ = plan_pipelines(state_);
  hazards_.emplace(state_.program, producers_);
}

absl::StatusOr<LoweredBody> OpLowering::run() {
  int warp_size = state_.target.warp_size();
  preamble_ = absl::StrCat("  const int mt_tid = ", to_absl(spelling_.thread_index), ";\n",
                           "  const int mt_lane = mt_tid % ", warp_size, ";\n",
                           "  const int mt_warp = mt_tid / ", warp_size, ";\n");
  push_scope();
  for (const Param& param : state_.program.params) {
    std::string c_type = register_type(param.type);
    std::string arg = "p_" + std::to_string(&param - state_.program.params.data());
    if (!param.type.pointer && (param.type.scalar == ScalarType::kBf16 || param.type.scalar == ScalarType::kF16)) {
      arg = absl::StrCat(param.type.scalar == ScalarType::kBf16 ? "__uint_as_float((unsigned)" : "mt_f16_bits_to_f32(",
                         arg, ".bits", param.type.scalar == ScalarType::kBf16 ? " << 16)" : ")");
    }
    line(absl::StrCat(c_type, " ", name(param.value), "[1] = {", arg, "};"));
  }
  MT_RETURN_IF_ERROR(block(state_.program.body));
  pop_scope();
  if (pipe_bytes_ > 0) {
    int64_t offset = (shared_bytes_ + 127) / 128 * 128;
    absl::StrAppend(&preamble_, "  constexpr int mt_pipe_offset = ", offset, ";\n");
    shared_bytes_ = offset + pipe_bytes_;
  }
  return LoweredBody{preamble_, body_, shared_bytes_, origins_};
}

Layout OpLowering::layout_or_default(ValueId v) const {
  if (is_scalar(v)) return state_.scalar_layout();
  if (state_.layouts[v]) return *state_.layouts[v];
  return default_layout(state_, type(v).shape);
}

std::string OpLowering::get(ValueId v, const Layout& layout) {
  if (is_scalar(v)) return name(v);
  if (!is_lazy(v) && *state_.layouts[v] == layout) return name(v);
  std::pair<ValueId, int> key{v, layout_id(layout)};
  for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
    auto found = scope->find(key);
    if (found != scope->end()) return found->second;
  }
  std::string result = is_lazy(v) ? materialize(v, layout) : convert(v, *state_.layouts[v], layout);
  scopes_.back()[key] = result;
  return result;
}

std::string OpLowering::materialize(ValueId v, const Layout& layout) {
  const Op& op = *producers_.at(v);
  int64_t regs = layout.num_regs();
  std::string out;
  switch (op.code) {
    case OpCode::kExpandDims: {
      ValueId operand = op.operands[0];
      if (!is_scalar(operand)) return get(operand, layout.slice(op.attrs.axis));
      out = fresh("t");
      line(absl::StrCat(reg_type(v), " ", out, "[1] = {", name(operand), "[0]};"));
      return out;
    }
    case OpCode::kBroadcast: {
      ValueId operand = op.operands[0];
      out = fresh("t");
      line(absl::StrCat(reg_type(v), " ", out, "[", regs, "];"));
      if (is_scalar(operand)) {
        unrolled("i", regs);
        line(absl::StrCat(out, "[i] = ", name(operand), "[0];"));
        close();
        return out;
      }
      const std::vector<int64_t>& in_shape = type(operand).shape;
      std::vector<DimLayout> dims = layout.dims();
      for (size_t d = 0; d < dims.size(); ++d) {
        if (in_shape[d] == 1) dims[d] = DimLayout{};
      }
      Layout in_layout = Layout::make(dims, layout.warp_size(), layout.num_warps());
      std::string src = get(operand, in_layout);
      std::string index = "0";
      for (int d = 0; d < layout.rank(); ++d) {
        if (in_shape[d] == 1) continue;
        absl::StrAppend(&index, " + ((i / ", layout.reg_stride(d), ") % ", layout.dim(d).regs(), ") * ",
                        in_layout.reg_stride(d));
      }
      unrolled("i", regs);
      line(absl::StrCat(out, "[i] = ", src, "[", index, "];"));
      close();
      return out;
    }
    case OpCode::kConstant:
    case OpCode::kArange: {
      out = fresh("t");
      line(absl::StrCat(reg_type(v), " ", out, "[", regs, "];"));
      unrolled("i", regs);
      if (op.code == OpCode::kConstant) {
        line(absl::StrCat(out, "[i] = ", constant_literal(op), ";"));
      } else {
        line(absl::StrCat(out, "[i] = ", op.attrs.ints.at(0), " + ", coord(layout, 0, "i"), ";"));
      }
      close();
      return out;
    }
    default: break;
  }
  MT_CHECK(is_elementwise(op.code), "only pure ops are lazy");
  out = fresh("t");
  line(absl::StrCat(reg_type(v), " ", out, "[", regs, "];"));
  absl::Status status = elementwise(op, layout, out);
  MT_CHECK(status.ok(), "a lazy elementwise op failed after its non-lazy twin passed");
  return out;
}

std::string OpLowering::convert(ValueId v, const Layout& from, const Layout& to) {
  std::string t = reg_type(v);
  int64_t elements = type(v).num_elements();
  need_smem(elements * register_bytes(type(v).element));
  std::vector<int64_t> strides = row_major(type(v).shape);
  line(absl::StrCat("// convert ", name(v), " ", from.str(), " -> ", to.str()));
  barrier();
  unrolled("i", from.num_regs());
  std::string guard = owner(from);
  line(absl::StrCat(guard.empty() ? "" : absl::StrCat("if (", guard, ") "), smem(t), "[",
                    linear(from, "i", strides), "] = ", name(v), "[i];"));
  close();
  barrier();
  std::string out = fresh("c");
  line(absl::StrCat(t, " ", out, "[", to.num_regs(), "];"));
  unrolled("i", to.num_regs());
  line(absl::StrCat(out, "[i] = ", smem(t), "[", linear(to, "i", strides), "];"));
  close();
  return out;
}

int OpLowering::layout_id(const Layout& layout) {
  for (size_t i = 0; i < layouts_.size(); ++i) {
    if (layouts_[i] == layout) return static_cast<int>(i);
  }
  int id = static_cast<int>(layouts_.size());
  layouts_.push_back(layout);
  absl::StrAppend(&preamble_, "  // L", id, " = ", layout.str(), "\n");
  // A thread's base coordinates as macros, not constants: each use recomputes its own from the lane
  // and warp (a few integer operations, hoisted out of loops), so a long kernel does not hold every
  // layout's bases in registers from its first line to its last (three of them spilled in
  // k3-tiny's K2 at 9 to 15 tokens on sm_90a).
  for (int d = 0; d < layout.rank(); ++d) {
    const DimLayout& dim = layout.dim(d);
    std::string warp = dim.wpb == 1 ? "0" : absl::StrCat("(mt_warp / ", dim.warp_stride, ") % ", dim.wpb);
    std::string lane = dim.tpw == 1 ? "0" : absl::StrCat("(mt_lane / ", dim.lane_stride, ") % ", dim.tpw);
    absl::StrAppend(&preamble_, "#define mt_L", id, "_b", d, " (((", warp, ") * ", dim.tpw, " + ", lane,
                    ") * ", dim.spt, ")\n");
  }
  absl::StrAppend(&preamble_, "  const bool mt_L", id, "_own = ((mt_lane & ", layout.replicated_lane_mask(),
                  ") | (mt_warp & ", layout.replicated_warp_mask(), ")) == 0;\n");
  return id;
}

std::string OpLowering::coord(const Layout& layout, int dim, std::string_view reg) {
  int id = layout_id(layout);
  const DimLayout& d = layout.dim(dim);
  return absl::StrCat("(mt_L", id, "_b", dim, " + mt_roff(", to_absl(reg), ", ", layout.reg_stride(dim), ", ", d.spt,
                      ", ", d.regs(), ", ", d.cover(), "))");
}

std::string OpLowering::linear(const Layout& layout, std::string_view reg, const std::vector<int64_t>& strides) {
  if (layout.rank() == 0) return "0";
  std::string text;
  for (int d = 0; d < layout.rank(); ++d) {
    if (layout.dim(d).size == 1) continue;
    absl::StrAppend(&text, text.empty() ? "" : " + ", coord(layout, d, reg));
    if (strides[d] != 1) absl::StrAppend(&text, " * ", strides[d]);
  }
  return text.empty() ? "0" : text;
}

std::string OpLowering::owner(const Layout& layout) {
  if (layout.replicated_lane_mask() == 0 && layout.replicated_warp_mask() == 0) return "";
  return absl::StrCat("mt_L", layout_id(layout), "_own");
}

std::vector<int64_t> OpLowering::row_major(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

void OpLowering::line(std::string_view text) {
  const bool directive = !text.empty() && text[0] == '#';
  if (!directive_.empty() && !after_pragma_ && !(directive && text.rfind("#line", 0) == 0)) {
    absl::StrAppend(&body_, directive_, "\n");
  }
  after_pragma_ = directive && text.rfind("#pragma", 0) == 0;
  if (directive) {
    absl::StrAppend(&body_, to_absl(text), "\n");
    return;
  }
  absl::StrAppend(&body_, std::string(2 * indent_, ' '), to_absl(text), "\n");
}

void OpLowering::open(std::string_view head) {
  line(absl::StrCat(to_absl(head), head.empty() ? "{" : " {"));
  ++indent_;
}

void OpLowering::close(std::string_view tail) {
  --indent_;
  line(tail);
}

void OpLowering::unrolled(std::string_view var, int64_t count) {
  line("#pragma unroll");
  open(absl::StrCat("for (int ", to_absl(var), " = 0; ", to_absl(var), " < ", count, "; ++", to_absl(var), ")"));
}

std::string OpLowering::fresh(std::string_view prefix) { return absl::StrCat("mt_", to_absl(prefix), counter_++); }

void OpLowering::declare(ValueId v, int64_t regs) {
  line(absl::StrCat(reg_type(v), " ", name(v), "[", regs, "];"));
}

void OpLowering::barrier() {
  line(absl::StrCat(to_absl(spelling_.barrier), ";"));
  hazards_->barrier();
}

std::string OpLowering::smem(std::string_view type, int64_t byte_offset) {
  if (byte_offset == 0) return absl::StrCat("((", to_absl(type), "*)mt_smem)");
  return absl::StrCat("((", to_absl(type), "*)(mt_smem + ", byte_offset, "))");
}

void OpLowering::need_smem(int64_t bytes) { shared_bytes_ = std::max(shared_bytes_, (bytes + 15) / 16 * 16); }

std::string OpLowering::shuffle_xor(const std::string& value, const std::string& type, std::string_view lane_mask) const {
  const bool narrow = type == "bool" || type == "signed char" || type == "unsigned char" || type == "short" ||
                      type == "unsigned short";
  if (!narrow) return spelling_.shuffle_xor(value, lane_mask);
  return absl::StrCat("(", type, ")", spelling_.shuffle_xor(absl::StrCat("(int)", value), lane_mask));
}

void OpLowering::broadcast_from_thread0(std::string_view var, std::string_view type) {
  need_smem(16);
  barrier();
  line(absl::StrCat("if (mt_tid == 0) ", smem(type), "[0] = ", to_absl(var), ";"));
  barrier();
  line(absl::StrCat(to_absl(var), " = ", smem(type), "[0];"));
}

void OpLowering::push_scope() { scopes_.emplace_back(); }
void OpLowering::pop_scope() { scopes_.pop_back(); }

void OpLowering::copy_into(std::string_view dest, std::string_view src, int64_t regs) {
  if (dest == src) return;
  unrolled("i", regs);
  line(absl::StrCat(to_absl(dest), "[i] = ", to_absl(src), "[i];"));
  close();
}

absl::Status OpLowering::block(const Block& block) {
  find_chained_dots(block);
  for (const Op& op : block.ops) {
    if (op.code == OpCode::kYield) continue;  // consumed by the region's owner
    MT_RETURN_IF_ERROR(this->op(op));
  }
  return absl::OkStatus();
}

absl::Status OpLowering::unsupported(const Op& op, std::string_view what) const {
  return absl::UnimplementedError(absl::StrCat(to_absl(op_name(op.code)), " at ", op.loc.str(), ": ", to_absl(what)));
}

absl::Status OpLowering::op(const Op& op) {
  if (pipelines_.is_staged(&op)) return absl::OkStatus();  // moved by its loop's pipeline
  if (op.loc.line > 0 && (origins_.empty() || !(origins_.back().loc == op.loc))) {
    if (state_.options.line_directives) directive_ = absl::StrCat("#line ", op.loc.line, " \"", escape(op.loc.file), "\"");
    // Lines counted incrementally: a count over the whole body per op would be quadratic.
    body_lines_ += static_cast<int>(std::count(body_.begin() + static_cast<std::ptrdiff_t>(body_counted_), body_.end(), '\n'));
    body_counted_ = body_.size();
    const int body_line = body_lines_;
    if (!origins_.empty() && origins_.back().generated_line == body_line) origins_.back().loc = op.loc;
    else origins_.push_back({body_line, op.loc});
  }
  bool lazy_result = !op.results.empty() && is_lazy(op.results[0]);
  switch (op.code) {
    case OpCode::kConstant:
      if (lazy_result) return absl::OkStatus();
      line(absl::StrCat(reg_type(op.results[0]), " ", name(op.results[0]), "[1] = {", constant_literal(op), "};"));
      return absl::OkStatus();
    case OpCode::kArange:
    case OpCode::kBroadcast:
    case OpCode::kExpandDims:
      MT_CHECK(lazy_result);
      return absl::OkStatus();
    case OpCode::kProgramId:
    case OpCode::kNumPrograms: {
      int axis = op.attrs.axis;
      if (axis < 0 || axis > 2) return unsupported(op, "axis must be 0, 1 or 2");
      std::string_view source = op.code == OpCode::kProgramId ? spelling_.block_index[axis] : spelling_.grid_size[axis];
      line(absl::StrCat("int ", name(op.results[0]), "[1] = {", to_absl(source), "};"));
      return absl::OkStatus();
    }
    case OpCode::kReshape:
    case OpCode::kTrans:
    case OpCode::kJoin:
    case OpCode::kSplit:
    case OpCode::kCat:
    case OpCode::kDequantMxfp4: return shape_op(op);
    case OpCode::kUnpackBf16: return unpack_bf16(op);
    case OpCode::kMxfp4WordPairs: return mxfp4_word_pairs(op);
    case OpCode::kLoad:
    case OpCode::kStore: {
      // Another thread may hold a copy of what this access touches (global_hazards.h).
      if (hazards_->needs_barrier(op)) barrier();
      MT_RETURN_IF_ERROR(op.code == OpCode::kLoad ? load(op) : store(op));
      hazards_->accessed(op);
      return absl::OkStatus();
    }
    case OpCode::kPrefetch: return prefetch(op);
    case OpCode::kAtomicRmw:
    case OpCode::kAtomicCas: return atomic(op);
    case OpCode::kFence: line(spelling_.fence(op.attrs.order, op.attrs.scope)); return absl::OkStatus();
    case OpCode::kBarrier: barrier(); return absl::OkStatus();
    case OpCode::kGlobalTimer: return global_timer(op);
    case OpCode::kWaitUntil: return wait_until(op);
    case OpCode::kLaunchDependents:
    case OpCode::kWaitGridDependency: return grid_dependency(op);
    case OpCode::kReduce:
    case OpCode::kArgReduce: return reduce(op);
    case OpCode::kScan: return scan(op);
    case OpCode::kSort:
    case OpCode::kTopK: return sort(op);
    case OpCode::kDot: return dot(op);
    case OpCode::kFor:
    case OpCode::kIf:
    case OpCode::kWhile: return control(op);
    case OpCode::kAssert: return assert_op(op);
    case OpCode::kPrint: return print(op);
    case OpCode::kYield: return unsupported(op, "a yield outside a region's end");
    default: break;
  }
  MT_CHECK(is_elementwise(op.code));
  if (lazy_result) return absl::OkStatus();
  Layout layout = layout_or_default(op.results[0]);
  declare(op.results[0], layout.num_regs());
  return elementwise(op, layout, name(op.results[0]));
}

absl::StatusOr<LoweredBody> lower_ops(const LoweringState& state) { return OpLowering(state).run(); }

}  // namespace monotile::dsl::lower
