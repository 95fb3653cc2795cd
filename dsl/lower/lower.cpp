// lower(): the pass list. Each pass is in its own file; with dumps on, the IR (annotated with what
// the passes so far know) is kept after each one, and printed to stderr under MONOTILE_DUMP_IR.
#include "dsl/lower/lower.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "dsl/lower/axis_analysis.h"
#include "dsl/lower/dump.h"
#include "dsl/lower/emit_kernel.h"
#include "dsl/lower/layout_assignment.h"
#include "dsl/lower/lowering_state.h"
#include "dsl/lower/op_lowering.h"
#include "dsl/lower/register_precheck.h"
#include "dsl/lower/spelling.h"
#include "dsl/lower/verify_pass.h"
#include "dsl/simplify.h"
#include "support/status_macros.h"

namespace monotile::dsl::lower {

bool dump_ir_requested() {
  const char* value = std::getenv("MONOTILE_DUMP_IR");
  return value != nullptr && std::string_view(value) != "0" && std::string_view(value) != "";
}

bool line_info_requested() {
  const char* value = std::getenv("MONOTILE_LINE_INFO");
  return value != nullptr && std::string_view(value) != "0" && std::string_view(value) != "";
}

absl::StatusOr<LoweredKernel> lower(const Program& program, const Target& target, const LowerOptions& requested) {
  LowerOptions options = requested;
  options.line_directives = options.line_directives || line_info_requested();
  LoweringState state{program, target, options, {}, {}, {}, {}};
  bool to_stderr = dump_ir_requested();
  bool dumping = options.dump_after_each || to_stderr;
  auto dump = [&](std::string_view pass, std::string text) {
    if (!dumping) return;
    if (to_stderr) std::fprintf(stderr, "// ---- monotile IR after %.*s ----\n%s\n", static_cast<int>(pass.size()),
                                pass.data(), text.c_str());
    state.dumps.push_back(PassDump{std::string(pass), std::move(text)});
  };

  MT_RETURN_IF_ERROR(verify_for_lowering(state));
  dump("verify", dumping ? dump_program(state, false, false) : "");
  state.program = simplify(state.program);
  dump("simplify", dumping ? dump_program(state, false, false) : "");
  assign_layouts(state);
  dump("layouts", dumping ? dump_program(state, true, false) : "");
  MT_RETURN_IF_ERROR(check_tile_registers(state));
  analyze_axes(state);
  dump("axis", dumping ? dump_program(state, true, true) : "");
  MT_ASSIGN_OR_RETURN(LoweredBody body, lower_ops(state));
  dump("ops", dumping ? body.preamble + body.body : "");
  LoweredKernel kernel = emit_kernel(state, body);
  dump("emit", dumping ? kernel.source : "");

  if (kernel.dynamic_shared_bytes > target.shared_memory_per_block()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "lowering \"", program.name, "\" for ", target.str(), ": needs ", kernel.dynamic_shared_bytes,
        " bytes of shared memory, the target has ", target.shared_memory_per_block(),
        "; hint: use smaller tiles for the ops that go through shared memory (dot, sort, trans, conversions)"));
  }
  kernel.waits_for_grid_dependency = state.program.waits_for_grid_dependency() && has_grid_dependency_wait(target);
  kernel.dumps = std::move(state.dumps);
  return kernel;
}

}  // namespace monotile::dsl::lower
