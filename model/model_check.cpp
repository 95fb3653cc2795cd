// The check report: config, then per-layer lines, then sample per-rank shapes, then reasons.
#include "model/model_check.h"

#include <memory>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/shard_plan.h"
#include "model/str_cat.h"
#include "model/weight_reasons.h"

namespace monotile::model {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) { return str_cat("[", absl::StrJoin(shape, ", "), "]"); }

std::string mib(uint64_t bytes) { return absl::StrFormat("%.2f MiB", static_cast<double>(bytes) / (1 << 20)); }

std::string config_summary(const ModelConfig& c) {
  std::string out;
  absl::StrAppend(&out, str_cat("model ", c.name, ": ", c.num_hidden_layers, " layers, hidden ", c.hidden_size,
                                  ", vocab ", c.vocab_size, ", AttnRes block ", c.attn_res_block_size, " (",
                                  c.block_count(), " blocks), eps ", c.rms_norm_eps, "\n"));
  absl::StrAppend(&out, str_cat("  KDA: ", c.kda_num_heads, " heads x ", c.kda_head_dim, ", conv ", c.conv_size,
                                  ", gate lower bound ", c.gate_lower_bound, "\n"));
  absl::StrAppend(&out, str_cat("  MLA: ", c.num_attention_heads, " heads, q_lora ", c.q_lora_rank, ", kv_lora ",
                                  c.kv_lora_rank, ", nope ", c.qk_nope_head_dim, ", rope ", c.qk_rope_head_dim,
                                  ", v ", c.v_head_dim, ", output gate ", c.mla_use_output_gate ? "yes" : "no", "\n"));
  absl::StrAppend(&out, str_cat("  MoE from layer ", c.first_k_dense_replace, ": ", c.num_experts, " experts, top ",
                                  c.num_experts_per_token, ", intermediate ", c.moe_intermediate_size, ", latent ",
                                  c.routed_expert_hidden_size, ", ", c.num_shared_experts, " shared (",
                                  c.shared_intermediate(), "), MXFP4 group ", c.mxfp4_group_size,
                                  "; dense intermediate ", c.intermediate_size, "; ", c.hidden_act, " beta ",
                                  c.situ_beta, "/", c.situ_linear_beta, "\n"));
  return out;
}

std::string rank_summary(const RankPlan& plan) {
  const RankDims& d = plan.dims;
  return str_cat("tp ", d.tp, " rank ", d.rank, ": KDA ", d.kda_heads, " heads (", d.kda_projection,
                 " channels), in_proj rows ", d.in_proj_rows, " (pad ", d.in_proj_pad, "), MLA ", d.mla_heads,
                 " heads, expert intermediate ", d.expert_intermediate, ", shared ", d.shared_intermediate,
                 ", dense ", d.dense_intermediate, ", up_proj rows ", d.up_proj_rows, "\n");
}

std::string layers_table(const ModelConfig& c, const RankPlan& plan) {
  std::string out = "layer  attn  mlp    block-write  served  bytes read by this rank\n";
  for (const LayerPlan& layer : plan.layers) {
    if (layer.layer < 0) {
      absl::StrAppend(&out, absl::StrFormat("model  (embedding, lm_head, final norms)        %14d  %s\n",
                                            layer.bytes_read(), mib(layer.bytes_read())));
      continue;
    }
    bool write = c.is_block_write_layer(layer.layer);
    absl::StrAppend(&out, absl::StrFormat(
        "%5d  %-4s  %-5s  %-11s  %-6s  %14d  %s\n", layer.layer, layer.attention == AttentionKind::kKda ? "kda" : "mla",
        layer.moe ? "moe" : "dense", write ? str_cat("yes (B[", layer.layer / c.attn_res_block_size, "])") : "no",
        std::string(served_kind_name(layer.served)), layer.bytes_read(), mib(layer.bytes_read())));
  }
  absl::StrAppend(&out, absl::StrFormat("total  %d bytes (%s)\n", plan.bytes_read(), mib(plan.bytes_read())));
  return out;
}

// The per-rank tensors of the first layer of each kind: dense, KDA + MoE, MLA + MoE.
std::string sample_shapes(const RankPlan& plan) {
  std::string out;
  bool dense = false, kda = false, mla = false;
  for (const LayerPlan& layer : plan.layers) {
    if (layer.layer < 0) continue;
    bool* seen = !layer.moe ? &dense : layer.attention == AttentionKind::kKda ? &kda : &mla;
    if (*seen) continue;
    *seen = true;
    absl::StrAppend(&out, str_cat("per-rank tensors of layer ", layer.layer, " (",
                                    layer.attention == AttentionKind::kKda ? "kda" : "mla", ", ",
                                    layer.moe ? "moe" : "dense", "):\n"));
    for (const RankTensor& tensor : layer.tensors) {
      absl::StrAppend(&out, absl::StrFormat("  %-52s %-4s %-18s %12d bytes\n", tensor.name,
                                            std::string(dtype_name(tensor.dtype)), shape_text(tensor.shape),
                                            tensor.nbytes()));
    }
  }
  return out;
}

}  // namespace

ModelCheck check_model(std::string_view name_or_dir, int tp, int rank) {
  ModelCheck check;
  absl::StatusOr<ModelConfig> config = load_config(name_or_dir);
  if (!config.ok()) {
    check.reasons.push_back(std::string(config.status().message()));
    return check;
  }
  absl::StrAppend(&check.report, config_summary(*config));
  absl::StatusOr<RankPlan> plan = plan_rank(*config, tp, rank);
  if (!plan.ok()) {
    check.reasons.push_back(std::string(plan.status().message()));
    return check;
  }
  absl::StrAppend(&check.report, rank_summary(*plan), layers_table(*config, *plan), sample_shapes(*plan));
  if (!embedded_config_json(name_or_dir).empty()) {
    absl::StrAppend(&check.report, "no checkpoint (an embedded config): only the config is checked\n");
    check.reasons = config_reasons(*config);
    return check;
  }
  absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::open(std::string(name_or_dir));
  if (!checkpoint.ok()) {
    check.reasons = config_reasons(*config);
    check.reasons.push_back(std::string(checkpoint.status().message()));
    return check;
  }
  absl::StrAppend(&check.report, str_cat("checkpoint: ", (*checkpoint)->files().size(), " safetensors files\n"));
  check.reasons = weight_reasons(*config, *plan, **checkpoint);
  return check;
}

}  // namespace monotile::model
