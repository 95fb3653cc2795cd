// A served layer against its float64 reference; see layer_check.h.
#include "runtime/decode/layer_check.h"

#include <algorithm>
#include <functional>

#include "kernels/reference/k3_parts.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {

namespace ref = kernels::reference;
using kernels::k3::check_output;
using kernels::k3::rule_for;

bool LayerCheck::passed() const {
  return std::all_of(outputs.begin(), outputs.end(), [](const kernels::k3::OutputCheck& c) { return c.passed(); });
}

double LayerCheck::worst_ulps() const {
  double worst = 0;
  for (const kernels::k3::OutputCheck& c : outputs) worst = std::max(worst, c.worst_ulps);
  return worst;
}

double LayerCheck::worst_rms() const {
  double worst = 0;
  for (const kernels::k3::OutputCheck& c : outputs) worst = std::max(worst, c.worst_rms);
  return worst;
}

absl::StatusOr<LayerCheck> check_layer(const model::ModelConfig& config, int layer, const ref::RankLayerWeights& w,
                                       const ref::LayerInput& input, const LayerResult& got,
                                       ref::InProjInput in_proj_input) {
  return check_layer(config, layer, std::span(&w, 1), input, got, 0, in_proj_input);
}

absl::StatusOr<LayerCheck> check_layer(const model::ModelConfig& config, int layer,
                                       std::span<const ref::RankLayerWeights> ranks, const ref::LayerInput& input,
                                       const LayerResult& got, int rank, ref::InProjInput in_proj_input) {
  MT_ASSIGN_OR_RETURN(ref::LayerOutput want,
                      ref::layer_reference(config, layer, ranks, input, ref::Rounding::kBf16, in_proj_input));
  const ref::RankLayerWeights& w = ranks[static_cast<size_t>(rank)];
  const int64_t h = config.hidden_size, blocks = config.block_count();
  const int64_t rows = static_cast<int64_t>(input.prefix.size()) / h;
  LayerCheck check;
  check.rows = static_cast<int>(rows);
  // In a KDA layer a = o_proj(core) follows K1's core, which has its own rounding points (a few
  // ulps, core's rule): at a block write the prefix restarts at a and takes core's rule; elsewhere
  // P + a takes P's rounding with a's error on top, up to core's RMS/64 floor.
  kernels::k3::CheckRule prefix_rule = rule_for("prefix'");
  if (config.is_kda_layer(layer)) {
    if (config.is_block_write_layer(layer)) {
      prefix_rule = rule_for("core");
      prefix_rule.why = "a = o_proj(core) at a block write: core's rule";
    } else {
      prefix_rule.abs_share = rule_for("core").abs_share;
      prefix_rule.why = "P + a, a = o_proj(core): one rounding, plus core's error floor";
    }
  }
  if (ranks.size() > 1 && !(config.is_kda_layer(layer) && config.is_block_write_layer(layer))) {
    // Across ranks a = bf16(sum of the ranks' bf16 partials) (PeerExchange): each partial's rounding
    // errs by 2^-9 of it, within 1/64 of the RMS in all (kernels/k3/k2_test_support's rule for a).
    prefix_rule.abs_share = std::max(prefix_rule.abs_share, 1.0 / 64);
    prefix_rule.why += "; across ranks, the ranks' partials of a each rounded to bf16 first";
  }
  check.outputs.push_back(check_output("prefix'", got.prefix, want.prefix, {rows, h}, prefix_rule));
  check.outputs.push_back(check_output("blocks", got.blocks, want.blocks, {rows, blocks, h}, rule_for("blocks")));
  if (config.is_kda_layer(layer)) {
    const ref::KdaCache& c = want.caches[static_cast<size_t>(rank)];
    const int64_t channels = static_cast<int64_t>(c.conv.size()) / (c.slots * c.state_len);
    check.outputs.push_back(check_output("conv_state", got.cache.conv, c.conv, {c.slots, c.state_len, channels},
                                         rule_for("conv_state")));
    check.outputs.push_back(check_output("recurrent_state", got.cache.state, c.state,
                                         {static_cast<int64_t>(c.state.size())}, rule_for("recurrent_state")));
  }
  // The MoE output on rows whose k-th and (k+1)-th router keys are 2e-3 apart or more: y's
  // roundings move a key by about 1e-4, so those rows choose the reference's experts.
  const int k = config.num_experts_per_token, experts = config.num_experts;
  std::span<const double> gate = w.at("block_sparse_moe.gate.weight");
  std::span<const double> bias = w.at("block_sparse_moe.gate.e_score_correction_bias");
  std::vector<double> got_m, want_m;
  for (int64_t t = 0; t < rows; ++t) {
    std::vector<double> keys = ref::matvec(gate, std::span(want.mlp_input).subspan(t * h, h), experts, h);
    for (int e = 0; e < experts; ++e) keys[e] = ref::sigmoid(static_cast<float>(keys[e])) + bias[e];
    std::sort(keys.begin(), keys.end(), std::greater<>());
    if (k < experts && keys[k - 1] - keys[k] < 2e-3) continue;
    ++check.clear_rows;
    got_m.insert(got_m.end(), got.out.begin() + t * h, got.out.begin() + (t + 1) * h);
    want_m.insert(want_m.end(), want.mlp_output.begin() + t * h, want.mlp_output.begin() + (t + 1) * h);
  }
  check.outputs.push_back(check_output("out", got_m, want_m, {check.clear_rows, h}, rule_for("out")));
  return check;
}

}  // namespace monotile::runtime::decode
