// Checkpoint tensor names, in one table: a checkpoint that names its tensors differently needs an
// edit here only. Names are those of the published K3 checkpoint (k3_checkpoint.md 2.1, 2.3).
#pragma once

#include <string>
#include <string_view>

namespace monotile::model {

struct TensorNames {
  std::string_view model_prefix = "language_model.model.";
  std::string_view lm_head = "language_model.lm_head.weight";
  std::string_view embed_tokens = "embed_tokens.weight";
  std::string_view final_norm = "norm.weight";
  std::string_view output_res_norm = "output_attn_res_norm.weight";
  std::string_view output_res_proj = "output_attn_res_proj.weight";
  std::string_view layer_prefix = "layers.";
  std::string_view attention = "self_attn.";
  std::string_view dense_mlp = "mlp.";
  std::string_view moe = "block_sparse_moe.";
  std::string_view experts = "experts.";
  std::string_view expert_packed = "weight_packed";
  std::string_view expert_scale = "weight_scale";
};

inline constexpr TensorNames kTensorNames{};

// "language_model.model.<name>"
std::string model_tensor(std::string_view name);
// "language_model.model.layers.<layer>.<suffix>"
std::string layer_tensor(int layer, std::string_view suffix);
// "language_model.model.layers.<layer>.block_sparse_moe.experts.<expert>.<w>.<part>", w in w1/w2/w3
std::string expert_tensor(int layer, int expert, std::string_view w, std::string_view part);

}  // namespace monotile::model
