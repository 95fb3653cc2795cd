// prefix = bf16(prefix + a), or a; see residual.h.
#include "kernels/standins/residual.h"

#include "absl/strings/str_cat.h"
#include "dsl/dsl.h"

namespace monotile::kernels::standins {

using namespace dsl;

Program residual_program(int hidden, bool restart) {
  Builder b(absl::StrCat("standin_residual_h", hidden, restart ? "_restart" : ""),
            {.num_warps = 4});
  auto prefix = b.arg("prefix", ptr(bf16)), a = b.arg("a", ptr(bf16));
  auto cols = program_id(0).to(i64) * hidden + arange(0, hidden);
  auto value = load(a + cols).to(f32);
  if (!restart) value = value + load(prefix + cols).to(f32);
  store(prefix + cols, value.to(bf16));
  return b.finish();
}

}  // namespace monotile::kernels::standins
