// The embedded configs, as Hugging Face config.json texts: "k3", the published shapes (values as
// k3_layer.md 1.1 lists them), and "k3-tiny", the same structure at sizes the CPU runs in seconds:
// 13 layers (layer 12 a block write), MLA at 3, 7, 11, KDA head_dim 128 and conv 4, MXFP4 experts.
#include <string_view>
#include <vector>

#include "model/config.h"

namespace monotile::model {
namespace {

constexpr std::string_view kK3 = R"json({
 "model_type": "kimi_k3",
 "architectures": [
  "KimiK3ForConditionalGeneration"
 ],
 "text_config": {
  "model_type": "kimi_linear",
  "vocab_size": 163840,
  "hidden_size": 7168,
  "num_hidden_layers": 93,
  "intermediate_size": 33792,
  "rms_norm_eps": 1e-05,
  "hidden_act": "situ",
  "activation_situ_beta": 4.0,
  "activation_situ_linear_beta": 25.0,
  "attn_res_block_size": 12,
  "linear_attn_config": {
   "kda_layers": [
    1,
    2,
    3,
    5,
    6,
    7,
    9,
    10,
    11,
    13,
    14,
    15,
    17,
    18,
    19,
    21,
    22,
    23,
    25,
    26,
    27,
    29,
    30,
    31,
    33,
    34,
    35,
    37,
    38,
    39,
    41,
    42,
    43,
    45,
    46,
    47,
    49,
    50,
    51,
    53,
    54,
    55,
    57,
    58,
    59,
    61,
    62,
    63,
    65,
    66,
    67,
    69,
    70,
    71,
    73,
    74,
    75,
    77,
    78,
    79,
    81,
    82,
    83,
    85,
    86,
    87,
    89,
    90,
    91
   ],
   "full_attn_layers": [
    4,
    8,
    12,
    16,
    20,
    24,
    28,
    32,
    36,
    40,
    44,
    48,
    52,
    56,
    60,
    64,
    68,
    72,
    76,
    80,
    84,
    88,
    92,
    93
   ],
   "num_heads": 96,
   "head_dim": 128,
   "short_conv_kernel_size": 4,
   "gate_lower_bound": -5.0,
   "use_full_rank_gate": true
  },
  "num_attention_heads": 96,
  "q_lora_rank": 1536,
  "kv_lora_rank": 512,
  "qk_nope_head_dim": 128,
  "qk_rope_head_dim": 64,
  "v_head_dim": 128,
  "mla_use_nope": true,
  "mla_use_output_gate": true,
  "num_experts": 896,
  "num_experts_per_token": 16,
  "moe_intermediate_size": 3072,
  "num_shared_experts": 2,
  "routed_expert_hidden_size": 3584,
  "latent_moe_use_norm": true,
  "moe_router_activation_func": "sigmoid",
  "moe_renormalize": true,
  "routed_scaling_factor": 1.0,
  "first_k_dense_replace": 1,
  "moe_layer_freq": 1,
  "use_grouped_topk": true,
  "num_expert_group": 1,
  "topk_group": 1,
  "topk_method": "noaux_tc",
  "tie_word_embeddings": false,
  "quantization_config": {
   "quant_method": "compressed-tensors",
   "format": "mxfp4-pack-quantized",
   "config_groups": {
    "group_0": {
     "targets": [
      "Linear"
     ],
     "weights": {
      "num_bits": 4,
      "type": "float",
      "group_size": 32,
      "strategy": "group",
      "symmetric": true,
      "scale_dtype": "uint8"
     }
    }
   },
   "ignore": [
    ".*self_attn.*",
    ".*shared_experts.*",
    ".*mlp\\.(gate|up|gate_up|down)_proj.*",
    "lm_head"
   ]
  }
 }
})json";

constexpr std::string_view kK3Tiny = R"json({
 "model_type": "kimi_k3",
 "architectures": [
  "KimiK3ForConditionalGeneration"
 ],
 "text_config": {
  "model_type": "kimi_linear",
  "vocab_size": 512,
  "hidden_size": 256,
  "num_hidden_layers": 13,
  "intermediate_size": 512,
  "rms_norm_eps": 1e-05,
  "hidden_act": "situ",
  "activation_situ_beta": 4.0,
  "activation_situ_linear_beta": 25.0,
  "attn_res_block_size": 12,
  "linear_attn_config": {
   "kda_layers": [
    1,
    2,
    3,
    5,
    6,
    7,
    9,
    10,
    11,
    13
   ],
   "full_attn_layers": [
    4,
    8,
    12
   ],
   "num_heads": 8,
   "head_dim": 128,
   "short_conv_kernel_size": 4,
   "gate_lower_bound": -5.0,
   "use_full_rank_gate": true
  },
  "num_attention_heads": 8,
  "q_lora_rank": 64,
  "kv_lora_rank": 32,
  "qk_nope_head_dim": 32,
  "qk_rope_head_dim": 16,
  "v_head_dim": 32,
  "mla_use_nope": true,
  "mla_use_output_gate": true,
  "num_experts": 16,
  "num_experts_per_token": 4,
  "moe_intermediate_size": 256,
  "num_shared_experts": 2,
  "routed_expert_hidden_size": 128,
  "latent_moe_use_norm": true,
  "moe_router_activation_func": "sigmoid",
  "moe_renormalize": true,
  "routed_scaling_factor": 1.0,
  "first_k_dense_replace": 1,
  "moe_layer_freq": 1,
  "use_grouped_topk": true,
  "num_expert_group": 1,
  "topk_group": 1,
  "topk_method": "noaux_tc",
  "tie_word_embeddings": false,
  "quantization_config": {
   "quant_method": "compressed-tensors",
   "format": "mxfp4-pack-quantized",
   "config_groups": {
    "group_0": {
     "targets": [
      "Linear"
     ],
     "weights": {
      "num_bits": 4,
      "type": "float",
      "group_size": 32,
      "strategy": "group",
      "symmetric": true,
      "scale_dtype": "uint8"
     }
    }
   },
   "ignore": [
    ".*self_attn.*",
    ".*shared_experts.*",
    ".*mlp\\.(gate|up|gate_up|down)_proj.*",
    "lm_head"
   ]
  },
  "min_moe_intermediate_per_partition": 32
 }
})json";

}  // namespace

std::string_view embedded_config_json(std::string_view name) {
  if (name == "k3") return kK3;
  if (name == "k3-tiny") return kK3Tiny;
  return {};
}

std::vector<std::string_view> embedded_config_names() { return {"k3", "k3-tiny"}; }

}  // namespace monotile::model
