// Control flow (for, if, while with carried values) and the debugging ops (device_assert, print).
// Carried values live in the region arguments' arrays, declared before the loop; a yield copies into
// temporaries first so that swapping carried values stays correct. Conditions are scalars, which every
// thread holds with the same value, so barriers inside regions are reached by all threads.
#include "absl/strings/str_cat.h"
#include "dsl/lower/op_lowering.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

std::string escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '%') {
      out += "%%";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

absl::Status OpLowering::control(const Op& op) {
  if (op.code == OpCode::kIf) {
    std::vector<Layout> layouts;
    for (ValueId result : op.results) {
      layouts.push_back(layout_or_default(result));
      declare(result, layouts.back().num_regs());
    }
    const GlobalHazards::Pending before = hazards_->save();
    std::vector<GlobalHazards::Pending> arms;
    for (size_t r = 0; r < op.regions.size(); ++r) {
      hazards_->restore(before);
      open(r == 0 ? absl::StrCat("if (", name(op.operands[0]), "[0])") : "else");
      push_scope();
      MT_RETURN_IF_ERROR(block(op.regions[r]));
      const Op& yield = op.regions[r].ops.back();
      for (size_t i = 0; i < op.results.size(); ++i) {
        copy_into(name(op.results[i]), get(yield.operands.at(i), layouts[i]), layouts[i].num_regs());
      }
      pop_scope();
      close();
      arms.push_back(hazards_->save());
    }
    // After the branch, whatever either arm (or no arm, without an else) left is pending.
    hazards_->restore(before);
    for (const GlobalHazards::Pending& arm : arms) hazards_->merge(arm);
    return absl::OkStatus();
  }
  bool is_for = op.code == OpCode::kFor;
  size_t first_init = is_for ? 3 : 0;
  const Block& carrier = op.regions.at(0);  // for: the body; while: the condition
  size_t arg_offset = is_for ? 1 : 0;
  std::vector<Layout> layouts;
  for (size_t i = first_init; i < op.operands.size(); ++i) {
    ValueId arg = carrier.args.at(i - first_init + arg_offset);
    layouts.push_back(layout_or_default(arg));
    declare(arg, layouts.back().num_regs());
    copy_into(name(arg), get(op.operands[i], layouts.back()), layouts.back().num_regs());
  }
  auto yield_into_carried = [&](const Block& region) {
    const Op& yield = region.ops.back();
    std::vector<std::string> temps;
    for (size_t i = 0; i < layouts.size(); ++i) {
      std::string temp = fresh("y");
      line(absl::StrCat(reg_type(yield.operands.at(i)), " ", temp, "[", layouts[i].num_regs(), "];"));
      copy_into(temp, get(yield.operands[i], layouts[i]), layouts[i].num_regs());
      temps.push_back(temp);
    }
    for (size_t i = 0; i < layouts.size(); ++i) {
      copy_into(name(carrier.args[i + arg_offset]), temps[i], layouts[i].num_regs());
    }
  };
  if (is_for) {
    const PipelinedLoop* pipelined = pipelines_.loop_of(&op);
    LoopPipeline pipeline;
    if (pipelined) {
      MT_RETURN_IF_ERROR(pipeline_prologue(op, *pipelined, pipeline));
      for (const StagedDot& dot : pipelined->dots) stage_read_[dot.dot] = pipeline.read;
      for (const StagedLoad& load : pipelined->loads) stage_read_[load.load] = pipeline.read;
    }
    std::string index_type = reg_type(op.operands[0]);
    std::string i = fresh("i");
    // A pipelined body is already wide (copies ahead, whole K steps of mma): unrolling a short
    // constant trip count only multiplies its live registers until they spill.
    if (pipelined) line("#pragma unroll 1");
    std::string lo = name(op.operands[0]) + "[0]";
    std::string hi = name(op.operands[1]) + "[0]";
    std::string step = name(op.operands[2]) + "[0]";
    open(absl::StrCat("for (", index_type, " ", i, " = ", lo, "; ", step, " > 0 ? ", i, " < ", hi, " : ", i, " > ", hi,
                      "; ", i, " += ", step, ")"));
    line(absl::StrCat(index_type, " ", name(carrier.args[0]), "[1] = {", i, "};"));
    // An iteration starts with the previous one's accesses pending; after the loop, those of the
    // last iteration or, with none, of the code before it.
    hazards_->enter_loop(op);
    const GlobalHazards::Pending entry = hazards_->save();
    if (pipelined) MT_RETURN_IF_ERROR(pipeline_top(op, *pipelined, pipeline, i));
    push_scope();
    MT_RETURN_IF_ERROR(block(carrier));
    yield_into_carried(carrier);
    pop_scope();
    hazards_->merge(entry);
    if (pipelined) pipeline_advance(*pipelined, pipeline);
    close();
    if (pipelined) pipeline_epilogue(op, *pipelined);
  } else {
    const Block& body = op.regions.at(1);
    open("for (;;)");
    hazards_->enter_loop(op);
    const GlobalHazards::Pending entry = hazards_->save();
    push_scope();
    MT_RETURN_IF_ERROR(block(carrier));
    line(absl::StrCat("if (!", get(carrier.ops.back().operands.at(0), state_.scalar_layout()), "[0]) break;"));
    pop_scope();
    push_scope();
    for (size_t i = 0; i < layouts.size(); ++i) {
      declare(body.args.at(i), layouts[i].num_regs());
      copy_into(name(body.args[i]), name(carrier.args[i]), layouts[i].num_regs());
    }
    MT_RETURN_IF_ERROR(block(body));
    yield_into_carried(body);
    pop_scope();
    close();
    hazards_->merge(entry);
  }
  for (size_t i = 0; i < op.results.size(); ++i) {
    declare(op.results[i], layouts[i].num_regs());
    copy_into(name(op.results[i]), name(carrier.args[i + arg_offset]), layouts[i].num_regs());
  }
  return absl::OkStatus();
}

absl::Status OpLowering::assert_op(const Op& op) {
  ValueId cond = op.operands.at(0);
  Layout layout = layout_or_default(cond);
  std::string c = get(cond, layout);
  std::string guard = layout.rank() == 0 ? "mt_tid == 0" : owner(layout);
  unrolled("i", layout.num_regs());
  open(absl::StrCat("if (", guard.empty() ? "" : absl::StrCat(guard, " && "), "!", c, "[i])"));
  // A constant format (no arguments) keeps printf from needing a stack frame.
  line(absl::StrCat("printf(\"", escape(op.loc.str()), ": device_assert failed: ", escape(op.attrs.text), "\\n\");"));
  line("mt_trap();");
  close();
  close();
  return absl::OkStatus();
}

absl::Status OpLowering::print(const Op& op) {
  for (ValueId value : op.operands) {
    ElementType element = type(value).element;
    std::string format;
    std::string cast;
    if (element.pointer) {
      format = "%p", cast = "(const void*)";
    } else if (is_float(element.scalar)) {
      format = "%f", cast = "(double)";
    } else if (element.scalar == ScalarType::kI64) {
      format = "%lld", cast = "(long long)";
    } else if (element.scalar == ScalarType::kU32) {
      format = "%u", cast = "(unsigned)";
    } else {
      format = "%d", cast = "(int)";
    }
    Layout layout = layout_or_default(value);
    std::string v = get(value, layout);
    std::string guard = layout.rank() == 0 ? "mt_tid == 0" : owner(layout);
    unrolled("i", layout.num_regs());
    std::string where = "";
    std::string args = "";
    for (int d = 0; d < layout.rank(); ++d) {
      absl::StrAppend(&where, d ? ", " : "[", "%d");
      absl::StrAppend(&args, ", ", coord(layout, d, "i"));
    }
    if (layout.rank() > 0) where += "]";
    line(absl::StrCat(guard.empty() ? "" : absl::StrCat("if (", guard, ") "), "printf(\"", escape(op.attrs.text),
                      where, " ", format, "\\n\"", args, ", ", cast, v, "[i]);"));
    close();
  }
  return absl::OkStatus();
}

}  // namespace monotile::dsl::lower
