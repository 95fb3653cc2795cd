// The weight checks over this rank's views, against model::plan_rank's per-rank tensors.
#include "runtime/decode/weight_reasons.h"

#include <string_view>

#include "model/shard_plan.h"
#include "model/str_cat.h"
#include "model/weight_reasons.h"

namespace monotile::runtime::decode {
namespace {

using model::str_cat;

// What the kernel of a layer reads: a KDA layer whole; of an MLA layer, what follows the host's
// attention (o_proj, the MLP AttnRes, the MoE).
bool kernel_reads(model::ServedKind served, std::string_view name) {
  if (served == model::ServedKind::kWhole) return true;
  if (name == "self_attn.o_proj.weight") return true;
  return !name.starts_with("self_attn.") && !name.starts_with("self_attention_res_") &&
         !name.starts_with("input_layernorm.");
}

void check_weight(const model::LayerPlan& layer, const model::RankTensor& expected,
                  const std::map<std::string, TensorView, std::less<>>* views,
                  std::vector<std::string>& reasons) {
  std::string what = str_cat("layer ", layer.layer, " weight \"", expected.name, "\"");
  std::string wanted =
      str_cat(model::dtype_name(expected.dtype), " ", shape_text(expected.shape), " contiguous");
  auto found = views ? views->find(expected.name)
                     : std::map<std::string, TensorView, std::less<>>::const_iterator{};
  if (!views || found == views->end()) {
    reasons.push_back(str_cat(what, " is missing: expected ", wanted));
    return;
  }
  const TensorView& view = found->second;
  if (view.dtype != expected.dtype || view.shape != expected.shape) {
    reasons.push_back(str_cat(what, ": ", view.shape != expected.shape ? "shape" : "dtype",
                              " differs: expected ", wanted, ", found ", describe(view)));
  } else if (!view.contiguous()) {
    reasons.push_back(str_cat(what, " is strided: expected ", wanted, ", found ", describe(view),
                              " (the kernels read weights in place; make the tensor contiguous)"));
  } else if (std::string off = misalignment(view); !off.empty()) {
    reasons.push_back(str_cat(what, off));
  }
}

}  // namespace

std::vector<std::string> weight_reasons(const Backbone& backbone) {
  if (backbone.config == nullptr) return {"no model config: expected Backbone::config"};
  const model::ModelConfig& config = *backbone.config;
  std::vector<std::string> reasons = model::config_reasons(config);
  if (backbone.layers_prefix.ends_with('.')) {
    reasons.push_back(
        str_cat("layers_prefix \"", backbone.layers_prefix,
                "\" ends in \".\": expected the decoder layers' module prefix without the index or "
                "its dot, as vLLM names it (\"language_model.model.layers\"), so that layer 1's "
                "attention is \"<layers_prefix>.1.self_attn\""));
  }
  absl::StatusOr<model::RankPlan> plan = model::plan_rank(config, backbone.tp, backbone.rank);
  if (!plan.ok()) {
    reasons.push_back(
        str_cat("rank ", backbone.rank, " of TP ", backbone.tp, ": ", plan.status().message()));
    return reasons;
  }
  bool any_served = false;
  for (const model::LayerPlan& layer : plan->layers) {
    if (layer.layer < backbone.start_layer || layer.layer >= backbone.end_layer) continue;
    if (layer.served == model::ServedKind::kNone) continue;
    any_served = true;
    auto views = backbone.weights.find(layer.layer);
    for (const model::RankTensor& tensor : layer.tensors) {
      if (!kernel_reads(layer.served, tensor.name)) continue;
      check_weight(layer, tensor, views == backbone.weights.end() ? nullptr : &views->second,
                   reasons);
    }
  }
  if (any_served && backbone.experts_layout != kCheckpointExpertsLayout) {
    reasons.push_back(str_cat(backbone.experts_layout.empty()
                                  ? std::string("experts_layout is not declared")
                                  : str_cat("experts_layout \"", backbone.experts_layout,
                                            "\" is not read by the kernels"),
                              ": expected \"", kCheckpointExpertsLayout,
                              "\", the layout the kernels read the MXFP4 experts in (the "
                              "checkpoint's w13/w2 bytes and E8M0 scales, "
                              "split on the intermediate as vLLM loads them); hint: keep the "
                              "checkpoint's expert bytes for the kernels "
                              "(a MoE backend that re-lays them after loading gives other values "
                              "in the same shapes) and declare "
                              "Backbone::experts_layout \"checkpoint\""));
  }
  if (!any_served) {
    reasons.push_back(str_cat("no served layer in this rank's layers [", backbone.start_layer, ", ",
                              backbone.end_layer,
                              "): expected a KDA or MLA MoE layer past layer 0"));
  }
  return reasons;
}

}  // namespace monotile::runtime::decode
