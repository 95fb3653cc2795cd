// The stand-in of an MLA layer's host half on a device, as launches on one stream (LayerIo::
// attention of the executor): the pending delta folded into the prefix (in place), the attention
// AttnRes with input_layernorm -> x, fused_qkv_a, q_a_layernorm, the latent cache append, q_b, the
// absorbed query, the attention over the cache and W_UV with the output gate -> o_proj's input,
// as kernels/reference/mla_attention.h computes it.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "jit/jit.h"
#include "kernels/standins/mla_decode.h"
#include "kernels/standins/standin_launch.h"
#include "model/config.h"
#include "runtime/device.h"

namespace monotile::kernels::standins {

struct MlaTensors {
  runtime::DevicePtr prefix = 0;  // bf16 [T, H]: P in, bf16(P + delta) out
  runtime::DevicePtr delta = 0;   // bf16 [T, H]
  runtime::DevicePtr blocks = 0;  // bf16 blocks[t, b, c]
  int64_t blocks_token_stride = 0, blocks_block_stride = 0;
  runtime::DevicePtr slots = 0;    // i32 [N]: the request's cache slot (< 0: padded)
  runtime::DevicePtr context = 0;  // i32 [N]: tokens already in the slot
  runtime::DevicePtr cache = 0;    // bf16 [slots, capacity, kv_lora + rope]
  int64_t cache_capacity = 0;
  runtime::DevicePtr core = 0;  // bf16 [T, NHl v]: o_proj's input
};

// What the stand-in loads: its kernels in launch order.
struct MlaPlan {
  MlaShape shape;
  PlannedKernel fold, attn_res, fused, q_norm, append, q_b, absorb, attention, output;
  std::vector<dsl::Program> programs() const;
};

class MlaStandin {
 public:
  // The plan of create's arguments. Refused as create refuses (but for the weights).
  static absl::StatusOr<MlaPlan> plan(const model::ModelConfig& config, const model::RankDims& dims,
                                      int layer, int tokens, int q);

  // Loads every program for `tokens` rows of `q` and allocates the scratch. Refused: a layer that
  // is not MLA, a config the reference does not cover (RoPE, no q_lora), a block-write layer, a
  // missing weight.
  static absl::StatusOr<std::unique_ptr<MlaStandin>> create(runtime::Device& device, jit::Jit& jit,
                                                            const model::ModelConfig& config,
                                                            const model::RankDims& dims, int layer,
                                                            const WeightAddresses& weights,
                                                            int tokens, int q);

  // Enqueues the host half on `stream`; nothing is copied to or from the host.
  absl::Status launch(const MlaTensors& tensors, runtime::Stream& stream) const;

  const MlaShape& shape() const { return shape_; }
  // The AttnRes output x [T, H] the last launch left (bf16).
  runtime::DevicePtr x() const { return x_.address(); }

 private:
  MlaStandin() = default;
  MlaShape shape_;
  int layer_ = 0;
  int64_t hidden_ = 0;
  std::unique_ptr<StandinKernel> fold_, attn_res_, fused_, q_norm_, append_, q_b_, absorb_,
      attention_, output_;
  runtime::DevicePtr ares_norm_ = 0, ares_proj_ = 0, in_norm_ = 0, w_fused_ = 0, q_norm_w_ = 0,
                     kv_norm_w_ = 0, w_qb_ = 0, w_kvb_ = 0;
  runtime::DeviceBuffer x_, fused_out_, q_c_, q_heads_, query_, latent_;
};

}  // namespace monotile::kernels::standins
