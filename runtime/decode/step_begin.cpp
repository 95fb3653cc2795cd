// The epoch bump; see step_begin.h.
#include "runtime/decode/step_begin.h"

#include "dsl/dsl.h"

namespace monotile::runtime::decode {

dsl::Program step_begin_program() {
  using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them
  Builder b("monotile_step_begin", {.num_warps = 1});
  auto epoch = b.arg("epoch", ptr(i32));
  // The launches before and after are ordered on the stream, so a plain store is seen by them.
  store(epoch, load(epoch) + 1);
  return b.finish();
}

}  // namespace monotile::runtime::decode
