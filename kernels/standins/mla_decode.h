// The MLA attention's decode kernels over a latent KV cache, from the fused_qkv_a output to
// o_proj's input, as kernels/reference/mla_attention.h computes it (vLLM's NoPE MLA decode, kv_b
// absorbed):
//   mla_cache_append: c_kv = bf16(kv_a_layernorm(fused's kv part)) and k_pe into the request's slot
//     at positions context .. context + q - 1;
//   mla_absorb: per (token, head) the MQA query [bf16(q_nope W_UK) | q_pe];
//   mla_attention: per (token, head) the softmax over the slot's positions 0 .. context + j (an
//     online softmax in f32 over blocks of positions), the latent output bf16(sum p entry / l);
//   mla_output: per (token, head) bf16(latent W_UV^T), times sigmoid(gate), rounded: o_proj's
//   input.
// A padded request (slot < 0) reads and writes no cache entry and its rows of the output are zero.
#pragma once

#include "dsl/ir.h"
#include "kernels/standins/grid.h"
#include "model/config.h"

namespace monotile::kernels::standins {

// The rank's MLA sizes (k3_layer.md 6).
struct MlaShape {
  int hidden = 0;
  int heads = 0;  // this rank's heads
  int q_lora = 0;
  int kv_lora = 0;
  int nope = 0;
  int rope = 0;
  int v = 0;
  int q = 1;         // tokens per request
  bool gate = true;  // mla_use_output_gate
  float eps = 1e-5f;
  int entry() const { return kv_lora + rope; }
  int fused_rows() const { return q_lora + entry() + (gate ? heads * v : 0); }
  int qk() const { return nope + rope; }
};

MlaShape mla_shape(const model::ModelConfig& config, int heads, int q);

// Every MLA kernel's grid: (heads, T) (mla_cache_append: (1, T)).
Grid mla_grid(const MlaShape& shape, int tokens);

// Parameters: fused (ptr<bf16> [T, fused_rows]), kv_norm (ptr<bf16> [kv_lora]), slots (ptr<i32>
// [N]), context (ptr<i32> [N]), cache (ptr<bf16>: entry (s, p) at s * cache_slot_stride + p *
// entry), cache_slot_stride (i64). Grid (1, T).
dsl::Program mla_cache_append_program(const MlaShape& shape);

// Parameters: q_heads (ptr<bf16> [T, heads qk]: q_b's output), kv_b (ptr<bf16> [heads (nope + v),
// kv_lora]), query (ptr<bf16> [T, heads, entry]).
dsl::Program mla_absorb_program(const MlaShape& shape);

// Parameters: query (ptr<bf16> [T, heads, entry]), slots, context (ptr<i32> [N]), cache
// (ptr<bf16>), cache_slot_stride (i64), latent (ptr<bf16> [T, heads, kv_lora]).
dsl::Program mla_attention_program(const MlaShape& shape);

// Parameters: latent (ptr<bf16> [T, heads, kv_lora]), kv_b (ptr<bf16>), fused (ptr<bf16>: the gate
// columns), slots (ptr<i32> [N]), core (ptr<bf16> [T, heads v]).
dsl::Program mla_output_program(const MlaShape& shape);

}  // namespace monotile::kernels::standins
