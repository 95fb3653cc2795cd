// AttnRes, one program per row, in column chunks; see attn_res.h.
#include "kernels/standins/attn_res.h"

#include <array>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dsl/dsl.h"

namespace monotile::kernels::standins {

using namespace dsl;

Program attn_res_program(const AttnResShape& s) {
  Builder b(absl::StrCat("standin_attn_res_h", s.hidden, "_nb", s.sources, "_eps", s.eps),
            {.num_warps = 4});
  auto blocks = b.arg("blocks", ptr(bf16));
  auto token_stride = b.arg("blocks_token_stride", i64),
       block_stride = b.arg("blocks_block_stride", i64);
  auto prefix = b.arg("prefix", ptr(bf16));
  auto norm = b.arg("norm", ptr(bf16)), proj = b.arg("proj", ptr(bf16)),
       out_norm = b.arg("out_norm", ptr(bf16));
  auto y = b.arg("y", ptr(bf16));
  int chunk = 16;
  while (chunk < s.hidden && chunk < 1024) chunk *= 2;
  auto token = program_id(0).to(i64);
  // Columns k0 .. k0 + chunk - 1 of source i of the row (blocks 0 .. sources-1, then the prefix).
  auto source = [&](int i, Value cols, Value ok) {
    if (i == s.sources) return load(prefix + token * s.hidden + cols, ok, 0.0f).to(f32);
    return load(blocks + token * token_stride + block_stride * i + cols, ok, 0.0f).to(f32);
  };
  // The mix's coefficients: softmax of the logits (1 for the prefix alone).
  std::vector<Value> coefficients;
  if (s.sources == 0) {
    coefficients.push_back(full({}, 1.0f, f32));
  } else {
    std::vector<Value> logits;
    Value top;
    for (int i = 0; i <= s.sources; ++i) {
      auto [dot, squares] = range(0, s.hidden, chunk, full({}, 0.0f, f32), full({}, 0.0f, f32),
                                  [&](Value k0, Value dot, Value squares) {
                                    auto cols = k0 + arange(0, chunk);
                                    auto ok = cols < s.hidden;
                                    auto v = source(i, cols, ok);
                                    auto w = load(norm + cols, ok, 0.0f).to(f32) *
                                             load(proj + cols, ok, 0.0f).to(f32);
                                    return std::array{dot + sum(v * w), squares + sum(v * v)};
                                  });
      auto logit = dot * rsqrt(squares / float(s.hidden) + s.eps);
      logits.push_back(logit);
      top = i == 0 ? logit : maximum(top, logit);
    }
    Value total;
    for (int i = 0; i <= s.sources; ++i) {
      logits[i] = exp(logits[i] - top);
      total = i == 0 ? logits[i] : total + logits[i];
    }
    for (int i = 0; i <= s.sources; ++i) coefficients.push_back(logits[i] / total);
  }
  auto mixed = [&](Value cols, Value ok) {
    Value m;
    for (int i = 0; i <= s.sources; ++i)
      m = i == 0 ? source(i, cols, ok) * coefficients[i]
                 : m + source(i, cols, ok) * coefficients[i];
    return m;
  };
  auto squares = range(0, s.hidden, chunk, full({}, 0.0f, f32), [&](Value k0, Value squares) {
    auto cols = k0 + arange(0, chunk);
    auto m = mixed(cols, cols < s.hidden);
    return squares + sum(m * m);
  });
  auto rstd = rsqrt(squares / float(s.hidden) + s.eps);
  range(0, s.hidden, chunk, [&](Value k0) {
    auto cols = k0 + arange(0, chunk);
    auto ok = cols < s.hidden;
    store(y + token * s.hidden + cols,
          (mixed(cols, ok) * rstd * load(out_norm + cols, ok, 0.0f).to(f32)).to(bf16), ok);
  });
  return b.finish();
}

}  // namespace monotile::kernels::standins
