// AttnRes, one program per row; see attn_res.h.
#include "kernels/standins/attn_res.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "dsl/dsl.h"

namespace monotile::kernels::standins {

using namespace dsl;

Program attn_res_program(const AttnResShape& s) {
  Builder b(absl::StrCat("standin_attn_res_h", s.hidden, "_nb", s.sources, "_eps", s.eps), {.num_warps = 4});
  auto blocks = b.arg("blocks", ptr(bf16));
  auto token_stride = b.arg("blocks_token_stride", i64), block_stride = b.arg("blocks_block_stride", i64);
  auto prefix = b.arg("prefix", ptr(bf16));
  auto norm = b.arg("norm", ptr(bf16)), proj = b.arg("proj", ptr(bf16)), out_norm = b.arg("out_norm", ptr(bf16));
  auto y = b.arg("y", ptr(bf16));
  auto token = program_id(0).to(i64);
  auto cols = arange(0, s.hidden);
  // Source i of the row: blocks 0 .. sources-1, then the prefix.
  auto source = [&](int i) {
    if (i == s.sources) return load(prefix + token * s.hidden + cols).to(f32);
    return load(blocks + token * token_stride + block_stride * i + cols).to(f32);
  };
  Value mixed;
  if (s.sources == 0) {
    mixed = source(0);
  } else {
    auto weight = load(norm + cols).to(f32) * load(proj + cols).to(f32);
    std::vector<Value> logits;
    Value top;
    for (int i = 0; i <= s.sources; ++i) {
      auto v = source(i);
      auto logit = sum(v * weight) * rsqrt(sum(v * v) / float(s.hidden) + s.eps);
      logits.push_back(logit);
      top = i == 0 ? logit : maximum(top, logit);
    }
    Value total;
    for (int i = 0; i <= s.sources; ++i) {
      auto e = exp(logits[i] - top);
      total = i == 0 ? e : total + e;
      mixed = i == 0 ? source(i) * e : mixed + source(i) * e;
    }
    mixed = mixed / total;
  }
  auto rstd = rsqrt(sum(mixed * mixed) / float(s.hidden) + s.eps);
  store(y + token * s.hidden + cols, (mixed * rstd * load(out_norm + cols).to(f32)).to(bf16));
  return b.finish();
}

}  // namespace monotile::kernels::standins
