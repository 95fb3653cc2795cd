// The Kimi-K3 text model's config: the fields the layers use, read from a Hugging Face config.json
// (fields under "text_config" when present) or from an embedded config by name ("k3", "k3-tiny"),
// and what follows from them: layer kinds, block-write layers, the layers a kernel serves, and the
// per-rank dimensions for a TP size.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace monotile::model {

enum class AttentionKind { kKda, kMla };
// What a kernel serves of a layer (the seed's layer_kinds): KDA layers whole, MLA layers (not
// block writes) their FFN; layer 0, dense layers and MLA block writes are not served.
enum class ServedKind { kNone, kWhole, kFfn };

struct ModelConfig {
  std::string name;  // "k3", "k3-tiny", or the folder read
  // The decoder layers' module prefix, as vLLM names the modules of this architecture (without the
  // index: layer N is "<layers_prefix>.N"): "language_model.model.layers" for a config with a
  // text_config (the published multimodal checkpoint), "model.layers" for a text-only config.
  std::string layers_prefix;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int num_hidden_layers = 0;
  int64_t intermediate_size = 0;  // the dense MLP of layers < first_k_dense_replace
  double rms_norm_eps = 0;
  std::string hidden_act;
  double situ_beta = 0;         // activation_situ_beta
  double situ_linear_beta = 0;  // activation_situ_linear_beta
  int attn_res_block_size = 0;

  // KDA (linear_attn_config)
  std::vector<int> kda_layers;  // 1-based, as the config lists them
  int kda_num_heads = 0;
  int kda_head_dim = 0;
  int conv_size = 0;  // short_conv_kernel_size
  double gate_lower_bound = 0;
  bool use_full_rank_gate = false;

  // MLA
  int num_attention_heads = 0;
  int64_t q_lora_rank = 0;
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  bool mla_use_nope = false;
  bool mla_use_output_gate = false;

  // MoE
  int num_experts = 0;
  int num_experts_per_token = 0;
  int64_t moe_intermediate_size = 0;
  int num_shared_experts = 0;
  int64_t routed_expert_hidden_size = 0;  // the latent width
  bool latent_moe_use_norm = false;
  std::string router_activation;  // moe_router_activation_func
  bool moe_renormalize = false;
  double routed_scaling_factor = 1.0;
  int first_k_dense_replace = 0;
  int moe_layer_freq = 1;
  int64_t min_moe_intermediate_per_partition = 256;

  // MXFP4 experts (quantization_config): group size 0 means the experts are not MXFP4.
  int mxfp4_group_size = 0;

  // Derived, 0-based layer index L.
  bool is_kda_layer(int layer) const;
  bool is_moe_layer(int layer) const;
  bool is_block_write_layer(int layer) const { return layer % attn_res_block_size == 0; }
  AttentionKind attention_kind(int layer) const { return is_kda_layer(layer) ? AttentionKind::kKda : AttentionKind::kMla; }
  ServedKind served_kind(int layer) const;
  // ceil(L / block): the blocks before layer L's attention AttnRes.
  int previous_blocks(int layer) const { return (layer + attn_res_block_size - 1) / attn_res_block_size; }
  int block_count() const { return previous_blocks(num_hidden_layers); }
  int64_t kda_projection() const { return int64_t{kda_num_heads} * kda_head_dim; }  // P
  int64_t shared_intermediate() const { return moe_intermediate_size * num_shared_experts; }
};

// Dimensions one TP rank holds. Every field is the TP size's share of the config's.
struct RankDims {
  int tp = 1;
  int rank = 0;
  int kda_heads = 0;              // NHl
  int64_t kda_projection = 0;     // Pl
  int64_t in_proj_rows = 0;       // 4 Pl + head_dim + NHl + pad
  int64_t in_proj_pad = 0;
  int mla_heads = 0;
  int64_t expert_intermediate = 0;  // Ir
  int64_t shared_intermediate = 0;
  int64_t dense_intermediate = 0;
  int64_t up_proj_rows = 0;         // routed_expert_up_proj rows of this rank
};

// Refused with the field: a size not divisible by `tp`, a rank outside [0, tp), expert
// intermediates that vLLM would pad (below min_moe_intermediate_per_partition), MXFP4 groups that
// do not divide the rank's intermediate, a rank's shared-expert intermediate or MLA o_proj input
// that is no multiple of 32 (the kernels' narrowest K step, model/kernel_limits.h).
absl::StatusOr<RankDims> rank_dims(const ModelConfig& config, int tp, int rank);

// Parses config.json text. `where` names it in messages. A missing field, a field of the wrong
// type, or a contradiction (for example a kda_layers entry outside 1..num_hidden_layers) is refused
// with the field's name, the expected and the actual value.
absl::StatusOr<ModelConfig> parse_config(std::string_view json_text, std::string_view where);

// "k3" or "k3-tiny": the embedded configs; otherwise a folder holding config.json.
absl::StatusOr<ModelConfig> load_config(std::string_view name_or_dir);

// The embedded config.json texts, by name; empty when there is none.
std::string_view embedded_config_json(std::string_view name);
std::vector<std::string_view> embedded_config_names();

std::string_view served_kind_name(ServedKind kind);

}  // namespace monotile::model
