// AttnRes of one row inside a layer kernel (k3_layer.md 3): the pending delta folded into the prefix
// and stored in place, the block write, the softmax mix over the block sources and the prefix, the
// output RMSNorm, one bf16 rounding. One program instance does the whole row in three passes over
// column chunks (logits; the mix's sum of squares; the normalized output), so no tile ever holds
// a whole row of every source; the second and third passes re-read the sources from L2.
#pragma once

#include <cstdint>
#include <optional>

#include "dsl/value.h"

namespace monotile::kernels::k3 {

struct AttnResRow {
  int hidden = 0;
  int nblocks = 0;       // block sources before the prefix
  int write_index = -1;  // >= 0: store the (updated) prefix to block write_index
  float eps = 1e-5f;     // the AttnRes norm's
  float out_eps = 1e-5f;  // the output norm's
  dsl::Value prefix;     // ptr<bf16>: the row
  std::optional<dsl::Value> delta;  // ptr<bf16>: the row, when a delta is pending
  dsl::Value blocks;     // ptr<bf16>: block 0 of the row
  dsl::Value block_stride;  // elements between blocks
  dsl::Value norm, proj, out_norm;  // ptr<bf16> [hidden]
  dsl::Value out;        // ptr<bf16>: the output row
};

void attn_res_row(const AttnResRow& row);

// The column chunk the passes step by: the largest of 1024, 512, ..., 16 dividing `hidden`.
int attn_res_chunk(int hidden);

}  // namespace monotile::kernels::k3
