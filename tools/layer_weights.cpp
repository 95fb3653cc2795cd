// Opening the model and loading one rank's K1 and K2 weights for `monotile layer`; see layer_weights.h.
#include "tools/layer_weights.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/seeded_weights.h"
#include "support/status_macros.h"

namespace monotile::tools {
namespace {

// The per-rank tensors K1 reads (kernels/k3/k1.h), relative to the layer.
bool read_by_k1(const std::string& name) {
  return name == "self_attention_res_norm.weight" || name == "self_attention_res_proj.weight" ||
         name == "input_layernorm.weight" || name == "self_attn.in_proj_qkvgfab.weight" ||
         name == "self_attn.f_b_proj.weight" || name == "self_attn.conv1d.weight" || name == "self_attn.dt_bias" ||
         name == "self_attn.A_log" || name == "self_attn.o_norm.weight";
}

// The per-rank tensors K2 reads (kernels/k3/k2.h), relative to the layer: o_proj, the MLP AttnRes,
// and every tensor of the latent MoE (the MXFP4 experts as the checkpoint's bytes, read in place).
bool read_by_k2(const std::string& name) {
  return name == "self_attn.o_proj.weight" || name == "mlp_res_norm.weight" || name == "mlp_res_proj.weight" ||
         name == "post_attention_layernorm.weight" || name.starts_with("block_sparse_moe.");
}

std::string layer_list(const model::ModelConfig& c, bool (model::ModelConfig::*kind)(int) const) {
  std::vector<int> layers;
  for (int l = 0; l < c.num_hidden_layers; ++l) {
    if ((c.*kind)(l)) layers.push_back(l);
  }
  if (layers.size() <= 16) return absl::StrJoin(layers, ", ");
  return absl::StrCat(absl::StrJoin(std::vector<int>(layers.begin(), layers.begin() + 12), ", "), ", ...");
}

}  // namespace

absl::StatusOr<LayerModel> open_layer_model(const std::string& name, std::optional<uint64_t> seed, int tp, int rank,
                                            int layer, LayerStage stage, std::optional<int> experts) {
  LayerModel out;
  const bool folder = model::embedded_config_json(name).empty();
  if (folder && seed) {
    return absl::InvalidArgumentError(absl::StrCat("--seed applies to an embedded config (k3, k3-tiny), not to the folder \"",
                                                   name, "\"; hint: a checkpoint folder has its own weights"));
  }
  if (folder && !std::filesystem::is_directory(name)) {
    std::vector<std::string> names;
    for (std::string_view embedded : model::embedded_config_names()) names.emplace_back(embedded);
    return absl::NotFoundError(absl::StrCat("--model \"", name, "\" is neither an embedded config (",
                                            absl::StrJoin(names, ", "), ") nor a checkpoint folder"));
  }
  MT_ASSIGN_OR_RETURN(out.config, model::load_config(name));
  if (experts) {
    const int all = out.config.num_experts, top_k = out.config.num_experts_per_token;
    if (folder) {
      return absl::InvalidArgumentError(absl::StrCat("--experts applies to an embedded config (k3, k3-tiny), not to the "
                                                     "folder \"", name, "\"; hint: a checkpoint has its own experts"));
    }
    if (*experts < top_k || *experts > all) {
      return absl::InvalidArgumentError(absl::StrCat("--experts ", *experts, ": expected ", top_k, " to ", all, " (",
                                                     name, " routes each row to ", top_k, " of its ", all, " experts)"));
    }
    out.config.num_experts = *experts;
  }
  if (tp < 1 || rank < 0 || rank >= tp) {
    return absl::InvalidArgumentError(absl::StrCat("--rank ", rank, " with --tp ", tp, ": expected 0 <= rank < tp"));
  }
  const model::ModelConfig& c = out.config;
  if (layer < 0 || layer >= c.num_hidden_layers) {
    return absl::InvalidArgumentError(absl::StrCat("--layer ", layer, " is outside 0..", c.num_hidden_layers - 1, " (",
                                                   c.name, " has ", c.num_hidden_layers, " layers)"));
  }
  if (stage == LayerStage::kK1 && !c.is_kda_layer(layer)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--stage k1: layer ", layer, " of ", c.name, " is an MLA layer; expected a KDA layer; hint: the KDA layers (0-based) are ",
        layer_list(c, &model::ModelConfig::is_kda_layer), "; --stage layer runs an MLA layer's FFN (K2) on the attention output given"));
  }
  if (stage == LayerStage::kLayer && !c.is_moe_layer(layer)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layer ", layer, " of ", c.name, " has a dense MLP, which K2 does not serve; expected a layer with the latent MoE (",
        layer_list(c, &model::ModelConfig::is_moe_layer), "); hint: --stage k1 runs the layer's attention half (K1) alone"));
  }
  MT_ASSIGN_OR_RETURN(model::RankPlan plan, model::plan_rank(c, tp, rank));
  out.dims = plan.dims;
  out.layer = layer;
  out.stage = stage;
  out.plan = plan.layers[static_cast<size_t>(layer)];
  const bool k1 = out.runs_k1(), k2 = out.runs_k2();
  std::erase_if(out.plan.tensors, [&](const model::RankTensor& t) {
    return !((k1 && read_by_k1(t.name)) || (k2 && read_by_k2(t.name)));
  });
  if (folder) {
    MT_ASSIGN_OR_RETURN(std::unique_ptr<model::Checkpoint> checkpoint, model::Checkpoint::open(name));
    out.source = std::move(checkpoint);
    out.weights = absl::StrCat("checkpoint ", name);
  } else {
    MT_ASSIGN_OR_RETURN(std::unique_ptr<model::SeededWeights> weights, model::SeededWeights::create(c, seed.value_or(1)));
    out.source = std::move(weights);
    out.weights = absl::StrCat("seeded weights of ", name, " (seed ", seed.value_or(1), ")");
    if (experts) absl::StrAppend(&out.weights, ", its first ", *experts, " routed experts");
  }
  return out;
}

absl::StatusOr<std::vector<uint8_t>> load_tensor(const LayerModel& model, const std::string& name) {
  const model::RankTensor* tensor = model.plan.find(name);
  if (tensor == nullptr) return absl::InternalError(absl::StrCat("tensor \"", name, "\" is not in the layer's plan"));
  absl::StatusOr<std::vector<uint8_t>> bytes = model::load_rank_tensor(*tensor, *model.source);
  if (!bytes.ok()) return with_context(bytes.status(), absl::StrCat("layer ", model.layer, " from ", model.weights));
  return bytes;
}

absl::StatusOr<kernels::reference::RankLayerWeights> load_reference_weights(const LayerModel& model) {
  absl::StatusOr<kernels::reference::RankLayerWeights> weights =
      kernels::reference::load_rank_layer(model.plan, model.dims, *model.source);
  if (!weights.ok()) return with_context(weights.status(), absl::StrCat("layer ", model.layer, " from ", model.weights));
  return weights;
}

}  // namespace monotile::tools
