// Pass dumps: one line per op ("%5 = add %3, %4 : f32[128]"), nested regions indented, with the
// lowering's facts appended. Ids are the program's own (the printer renumbers; dumps must not).
#include "dsl/lower/dump.h"

#include "absl/strings/str_cat.h"
#include "support/strings.h"

namespace monotile::dsl::lower {
namespace {

void dump_block(const LoweringState& state, const Block& block, int depth, bool layouts, bool axis,
                std::string& out) {
  std::string indent(2 * depth, ' ');
  auto facts = [&](ValueId v) {
    std::string text;
    if (layouts) {
      if (state.program.type_of(v).is_scalar()) {
        text += " scalar";
      } else if (state.layouts.size() > static_cast<size_t>(v) && state.layouts[v]) {
        absl::StrAppend(&text, " ", state.layouts[v]->str());
      } else {
        text += " lazy";
      }
    }
    if (axis && state.axis.size() > static_cast<size_t>(v)) absl::StrAppend(&text, " {", state.axis[v].str(), "}");
    return text;
  };
  if (!block.args.empty()) {
    absl::StrAppend(&out, indent, "^(");
    for (size_t i = 0; i < block.args.size(); ++i) {
      ValueId arg = block.args[i];
      absl::StrAppend(&out, i ? ", " : "", "%", arg, ": ", state.program.type_of(arg).str(), facts(arg));
    }
    out += "):\n";
  }
  for (const Op& op : block.ops) {
    out += indent;
    for (size_t i = 0; i < op.results.size(); ++i) absl::StrAppend(&out, i ? ", " : "", "%", op.results[i]);
    if (!op.results.empty()) out += " = ";
    absl::StrAppend(&out, to_absl(op_name(op.code)));
    for (size_t i = 0; i < op.operands.size(); ++i) absl::StrAppend(&out, i ? ", %" : " %", op.operands[i]);
    for (ValueId result : op.results) absl::StrAppend(&out, " : ", state.program.type_of(result).str(), facts(result));
    if (op.loc.line > 0) absl::StrAppend(&out, "  // ", op.loc.str());
    out += "\n";
    for (const Block& region : op.regions) dump_block(state, region, depth + 1, layouts, axis, out);
  }
}

}  // namespace

std::string dump_program(const LoweringState& state, bool with_layouts, bool with_axis) {
  std::string out = absl::StrCat("kernel ", state.program.name, " num_warps=", state.program.options.num_warps,
                                 " target=", state.target.str(), "\n");
  dump_block(state, state.program.body, 1, with_layouts, with_axis, out);
  return out;
}

}  // namespace monotile::dsl::lower
