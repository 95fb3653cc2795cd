// Float64 reference of an MLA layer's attention on one TP rank at decode / spec-verify time, from
// the AttnRes output x to o_proj's input (k3_layer.md 6, k3_checkpoint.md 5), as vLLM's Kimi-K3 MLA
// decode runs it: no RoPE, kv_b absorbed into the query and the output, attention over the latent
// KV cache, the sigmoid output gate. The latent cache is the same on every rank (q_a and kv_a are
// replicated); a rank's output is its heads' columns of the TP 1 output.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/reference/k3_layer_reference.h"
#include "kernels/reference/k3_parts.h"
#include "model/config.h"

namespace monotile::kernels::reference {

// One MLA layer's latent KV cache: `entries` is [slots, capacity, kv_lora_rank + qk_rope_head_dim]
// row-major; entry (s, p) holds token p of the sequence in slot s as [c_kv | k_pe]: c_kv the
// kv_a_layernorm output (kv_lora_rank values), k_pe the raw rope part of kv_a (qk_rope_head_dim
// values, never rotated). A slot holds one request's sequence; positions at or past the request's
// context length are not read.
struct MlaCache {
  int64_t slots = 0;
  int64_t capacity = 0;
  std::vector<double> entries;
};

// A zero-filled cache of the config's entry width.
MlaCache make_mla_cache(const model::ModelConfig& config, int64_t slots, int64_t capacity);

// Uniform spec-verify step: slots.size() requests of q tokens each, request-major (T = N q rows).
struct MlaStep {
  int q = 0;
  std::vector<int32_t> slots;    // [N]: the request's cache slot; < 0: a padded request
  std::vector<int64_t> context;  // [N]: tokens already in the slot (ignored for a padded request)
};

// o_proj's input `core` [T, NHl v_head_dim] of `rank` (heads rank NHl .. rank NHl + NHl - 1), for
// x [T, H]. Token j of request n is written to its slot at position context[n] + j, then attends
// causally to positions [0, context[n] + j] of the slot, every new token of the step included. A
// padded request's rows are zero and it reads and writes no cache entry. Under kBf16, values are
// rounded where vLLM's bf16 decode rounds: the fused_qkv_a (and gate) GEMM output, each
// layernorm's output (once: the fused q/kv RMSNorm rounds x rstd w once), the q_b output, the
// absorbed query q_nope W_UK, the attention's latent output, its W_UV product, and the gated
// product. The softmax scale is (qk_nope_head_dim + qk_rope_head_dim)^-0.5.
// Refused, with every reason in one message: a layer that is not MLA, a config the reference does
// not cover (RoPE, no q_lora), weights or x of the wrong size, a cache of the wrong size, a slot
// outside the cache or shared by two requests, a negative context, context + q past the capacity.
absl::StatusOr<std::vector<double>> mla_attention_reference(const model::ModelConfig& config,
                                                            int layer, const RankLayerWeights& rank,
                                                            std::span<const double> x,
                                                            const MlaStep& step, MlaCache& cache,
                                                            Rounding rounding);

}  // namespace monotile::kernels::reference
