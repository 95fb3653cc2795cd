// AttnRes of one row (k3_layer.md 3) as a plain program, one per token: the sources are `sources`
// blocks of the row then the prefix row; each source's logit is (v . norm * proj) rsqrt(mean(v^2) +
// eps), the softmax over them mixes the sources (with no block the prefix alone), then the output
// RMSNorm: y = bf16(mixed rstd out_norm), rounded once. f32 throughout; the sources are read twice
// (logits, then the mix) rather than held.
#pragma once

#include "dsl/ir.h"

namespace monotile::kernels::standins {

struct AttnResShape {
  int hidden = 0;
  int sources = 0;  // blocks before the prefix
  float eps = 1e-5f;
};

// Parameters: blocks (ptr<bf16>), blocks_token_stride, blocks_block_stride (i64 elements:
// blocks[t, b, c]), prefix (ptr<bf16> [T, hidden]), norm, proj, out_norm (ptr<bf16> [hidden]),
// y (ptr<bf16> [T, hidden]). Grid: T programs.
dsl::Program attn_res_program(const AttnResShape& shape);

}  // namespace monotile::kernels::standins
