// plan, step_reason and prepare_kv, in the seed's order (seed_source.md 1.8).
#include "runtime/decode/step_plan.h"

#include <algorithm>

#include "model/str_cat.h"
#include "runtime/decode/agree.h"

namespace monotile::runtime::decode {

std::optional<std::string_view> step_reason(const AttnMetadata* attn_metadata,
                                            std::string_view kda_prefix, int width) {
  if (attn_metadata == nullptr) return "no metadata";
  auto entry = attn_metadata->find(kda_prefix);
  if (entry == attn_metadata->end() || !entry->second.spec_sequence_masks) return "not spec-verify";
  const SpecMetadata& m = entry->second;
  if (m.num_prefills != 0 || m.num_decodes != 0 || m.num_spec_decodes < 1) return "not pure decode";
  int64_t q = m.spec_state_indices.shape.empty() ? 0 : m.spec_state_indices.shape.back();
  if (m.uniform_spec_sequence_length != q || m.num_spec_decodes * q != width) return "not uniform";
  return std::nullopt;
}

bool PlannedStep::serves(int layer) const {
  return layers && std::binary_search(layers->begin(), layers->end(), layer);
}

StepPlanner::StepPlanner(DecodeConfig config, const model::ModelConfig& model, model::RankDims dims,
                         std::vector<int> layers, std::string kda_prefix)
    : config_(config),
      model_(&model),
      dims_(dims),
      layers_(std::move(layers)),
      kda_prefix_(std::move(kda_prefix)) {
  std::sort(layers_.begin(), layers_.end());
}

std::optional<StepPlanner::KvKey> StepPlanner::kv_key(const TensorView* state) {
  if (state == nullptr || state->elements() == 0) return std::nullopt;
  return KvKey{state->data, state->elements()};
}

absl::Status StepPlanner::prepare_kv(const std::vector<KdaCache>& caches, Group& group,
                                     std::vector<std::string> reasons) {
  kv_.reset();
  std::optional<KvKey> key = caches.empty() ? std::nullopt : kv_key(&caches.front().recurrent);
  // Whether anything is bound is agreed first: with nothing bound anywhere there is nothing to
  // check (the seed returns), and a rank unbound beside bound peers must not leave them waiting.
  absl::StatusOr<std::vector<std::string>> bound = group.all_gather(key ? "1" : "0");
  if (!bound.ok()) {
    return absl::Status(
        bound.status().code(),
        model::str_cat("TP ranks could not agree on the KV caches: ", bound.status().message()));
  }
  if (std::all_of(bound->begin(), bound->end(), [](const std::string& b) { return b == "0"; })) {
    return absl::OkStatus();
  }
  if (!key) {
    reasons.push_back(
        "no KV cache bound on this rank (no caches, or an empty recurrent state) while other TP "
        "ranks bound theirs");
  } else {
    for (std::string& reason : cache_reasons(caches, *model_, dims_, config_.q))
      reasons.push_back(std::move(reason));
  }
  absl::Status agreed = agree(reasons, group, "the KV caches");
  if (!agreed.ok()) return agreed;
  kv_ = key;
  return absl::OkStatus();
}

absl::StatusOr<std::optional<PlannedStep>> StepPlanner::plan(const StepInputs& step) const {
  if (step.pipeline_stage_inputs || !kv_) return std::nullopt;
  if (!step.forward_context) return std::nullopt;
  if (step.graph_mode == GraphMode::kPiecewise) return std::nullopt;
  if (!config_.has_width(step.width)) return std::nullopt;
  if (step_reason(step.attn_metadata, kda_prefix_, step.width)) return std::nullopt;
  if (kv_key(step.kda_state) != kv_) {
    return absl::FailedPreconditionError(model::str_cat(
        "the KV cache of \"", kda_prefix_,
        "\" was re-bound without prepare_kv: call prepare_kv after every KV-cache bind"));
  }
  return PlannedStep{step.width, step.attn_metadata, &layers_};
}

}  // namespace monotile::runtime::decode
