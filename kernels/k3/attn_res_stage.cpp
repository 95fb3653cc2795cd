#include "kernels/k3/attn_res_stage.h"

#include <array>
#include <vector>

#include "dsl/dsl.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

int attn_res_chunk(int hidden) {
  for (int chunk = 1024; chunk >= 16; chunk /= 2) {
    if (hidden % chunk == 0) return chunk;
  }
  return 0;
}

void attn_res_row(const AttnResRow& r) {
  const int chunk = attn_res_chunk(r.hidden);
  const int sources = r.nblocks + 1;
  auto offsets = arange(0, chunk);
  auto source = [&](int s, const Value& cols) {
    return s < r.nblocks ? load(r.blocks + s * r.block_stride + cols).to(f32) : load(r.prefix + cols).to(f32);
  };

  // Pass 1: the prefix updated (delta folded in, one rounding; stored in place and to the written
  // block), and per source its dot with norm * proj and its sum of squares.
  std::vector<Operand> zero(2 * sources, Operand(0.0f));
  std::vector<Value> sums = detail::build_for(
      0, r.hidden, chunk, zero,
      [&](Value c0, const std::vector<Value>& acc) {
        auto cols = c0 + offsets;
        auto weight = load(r.norm + cols).to(f32) * load(r.proj + cols).to(f32);
        std::vector<Value> next;
        for (int s = 0; s < sources; ++s) {
          Value v;
          if (s == r.nblocks) {
            v = load(r.prefix + cols).to(f32);
            if (r.delta) {
              auto updated = (v + load(*r.delta + cols).to(f32)).to(bf16);
              store(r.prefix + cols, updated);
              v = updated.to(f32);
            }
            if (r.write_index >= 0) store(r.blocks + r.write_index * r.block_stride + cols, v.to(bf16));
          } else {
            v = source(s, cols);
          }
          next.push_back(acc[2 * s] + sum(v * weight));
          next.push_back(acc[2 * s + 1] + sum(v * v));
        }
        return next;
      },
      SourceLocation::current());
  // The updated prefix is re-read by the program's other threads below.
  barrier();

  // The softmax weights, unnormalized (e_s) with their sum; nblocks == 0 mixes the prefix alone.
  std::vector<Value> e(sources);
  Value den = full({}, 1.0f, f32);
  if (r.nblocks > 0) {
    std::vector<Value> logit(sources);
    Value top;
    for (int s = 0; s < sources; ++s) {
      logit[s] = sums[2 * s] * rsqrt(sums[2 * s + 1] / float(r.hidden) + r.eps);
      top = s == 0 ? logit[s] : maximum(top, logit[s]);
    }
    for (int s = 0; s < sources; ++s) {
      e[s] = exp(logit[s] - top);
      den = s == 0 ? e[s] : den + e[s];
    }
  } else {
    e[0] = full({}, 1.0f, f32);
  }
  auto mixed = [&](const Value& cols) {
    Value m = e[0] * source(0, cols);
    for (int s = 1; s < sources; ++s) m = m + e[s] * source(s, cols);
    return m / den;
  };

  // Pass 2: the mix's sum of squares. Pass 3: the normalized, rounded output.
  auto squares = range(0, r.hidden, chunk, 0.0f, [&](Value c0, Value acc) {
    auto m = mixed(c0 + offsets);
    return acc + sum(m * m);
  });
  auto rstd = rsqrt(squares / float(r.hidden) + r.out_eps);
  range(0, r.hidden, chunk, [&](Value c0) {
    auto cols = c0 + offsets;
    store(r.out + cols, (mixed(cols) * rstd * load(r.out_norm + cols).to(f32)).to(bf16));
  });
}

}  // namespace monotile::kernels::k3
