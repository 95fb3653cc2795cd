// A decoder layer's bytes in a decode step; see decode_layer_bytes.h.
#include "tools/decode_layer_bytes.h"

#include <cmath>

#include "absl/strings/match.h"

namespace monotile::tools {

LayerBytes layer_bytes(const model::ModelConfig& config, const model::LayerPlan& layer,
                       const model::RankDims& dims, const StepShape& step) {
  LayerBytes bytes;
  const double rows = double{1} * step.requests * step.q;
  const double experts = config.num_experts;
  // Each row chooses top_k distinct experts: an expert escapes a row with probability 1 - k/E.
  const double chosen =
      step.chosen_experts >= 0 ? step.chosen_experts
      : experts > 0 ? experts * (1 - std::pow(1 - config.num_experts_per_token / experts, rows))
                    : 0;
  for (const model::RankTensor& t : layer.tensors) {
    const double all = static_cast<double>(t.nbytes());
    // The routed experts' tensors lead with the expert index.
    const bool routed = absl::StrContains(t.name, "experts.w") && !t.shape.empty() &&
                        t.shape[0] == config.num_experts;
    bytes.weights += routed ? all * chosen / experts : all;
  }
  // Each request reads its state's slot and writes one per token (the spec-verify states).
  const double per_request = 1.0 + step.q;
  if (config.is_kda_layer(layer.layer)) {
    const double conv = double{1} * step.conv_state_len * 3 * dims.kda_projection * 2;
    const double recurrent = double{1} * dims.kda_heads * 128 * 128 * 4;
    bytes.state = step.requests * per_request * (conv + recurrent);
  } else {
    const double entry = double{1} * (config.kv_lora_rank + config.qk_rope_head_dim) * 2;
    bytes.state = step.requests * (step.mla_context + step.q) * entry;
  }
  // The prefix read and written, the blocks read, the pending delta in and the output out.
  const double h = static_cast<double>(config.hidden_size);
  bytes.activations = rows * h * 2 * (2 + config.block_count() + 2);
  return bytes;
}

}  // namespace monotile::tools
