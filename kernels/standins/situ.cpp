// SiTU over the gate_up output; see situ.h.
#include "kernels/standins/situ.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "dsl/dsl.h"

namespace monotile::kernels::standins {

using namespace dsl;

namespace {
int block_of(const SituShape& s) {
  int block = 16;
  while (block < s.intermediate && block < s.block) block *= 2;
  return block;
}
}  // namespace

Grid situ_grid(const SituShape& s, int tokens) {
  const int block = block_of(s);
  return {.x = (s.intermediate + block - 1) / block, .y = tokens, .z = 1};
}

Program situ_program(const SituShape& s) {
  Builder b(absl::StrCat("standin_situ_i", s.intermediate, "_b", s.beta, "_lb", s.linear_beta),
            {.num_warps = 4});
  auto gu = b.arg("gu", ptr(bf16)), act = b.arg("act", ptr(bf16));
  const int block = block_of(s);
  auto token = program_id(1).to(i64);
  auto cols = program_id(0) * block + arange(0, block);
  auto ok = cols < s.intermediate;
  auto g = load(gu + token * (2 * s.intermediate) + cols, ok, 0.0f).to(f32);
  auto u = load(gu + token * (2 * s.intermediate) + s.intermediate + cols, ok, 0.0f).to(f32);
  auto value = s.beta * tanh(g / s.beta) * sigmoid(g) * (s.linear_beta * tanh(u / s.linear_beta));
  store(act + token * s.intermediate + cols, value.to(bf16), ok);
  return b.finish();
}

}  // namespace monotile::kernels::standins
