// The fixed point is detected on the printed text (values renumbered), which ignores dead value
// slots; each round only removes or replaces ops, so it ends after at most as many rounds as ops.
#include "dsl/simplify.h"

#include "dsl/cse.h"
#include "dsl/dce.h"
#include "dsl/fold_constants.h"
#include "dsl/printer.h"

namespace monotile::dsl {

Program simplify(const Program& program) {
  Program current = eliminate_dead_code(eliminate_common_subexpressions(fold_constants(program)));
  std::string text = to_text(current);
  while (true) {
    Program next = eliminate_dead_code(eliminate_common_subexpressions(fold_constants(current)));
    std::string next_text = to_text(next);
    if (next_text == text) return next;
    current = std::move(next);
    text = std::move(next_text);
  }
}

}  // namespace monotile::dsl
