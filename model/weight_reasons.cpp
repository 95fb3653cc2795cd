// The weight checks, collected rather than stopped at the first.
#include "model/weight_reasons.h"

#include <cmath>
#include <cstring>
#include <set>

#include "model/kernel_limits.h"
#include "model/str_cat.h"
#include "absl/strings/str_join.h"

namespace monotile::model {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) { return str_cat("[", absl::StrJoin(shape, ", "), "]"); }

std::string where(int layer) { return layer < 0 ? std::string("model") : str_cat("layer ", layer); }

bool shape_matches(const ExpectedTensor& expected, const TensorInfo& info) {
  if (!expected.at_least) return info.shape == expected.shape;
  int64_t elements = info.elements();
  int64_t non_unit = 0;
  for (int64_t dim : info.shape) non_unit += dim != 1;
  return non_unit <= 1 && elements >= expected.shape[0];
}

void check_tensor(int layer, const ExpectedTensor& expected, const Checkpoint& checkpoint,
                  std::vector<std::string>& reasons) {
  const TensorInfo* info = checkpoint.find(expected.name);
  std::string what = str_cat(where(layer), ": tensor \"", expected.name, "\"");
  std::string wanted = str_cat(dtype_name(expected.dtype), " ", shape_text(expected.shape),
                                    expected.at_least ? " or longer" : "", " contiguous");
  if (!info) {
    reasons.push_back(str_cat(what, " is missing; expected ", wanted));
    return;
  }
  std::string found = str_cat(dtype_name(info->dtype), " ", shape_text(info->shape));
  bool shape_ok = shape_matches(expected, *info);
  if (!shape_ok || info->dtype != expected.dtype) {
    reasons.push_back(str_cat(what, ": ", !shape_ok ? "shape" : "dtype", " differs: found ", found,
                                   ", expected ", wanted));
  }
  if (!info->contiguous()) {
    reasons.push_back(str_cat(what, " is strided: found ", info->end - info->begin, " bytes for ", found,
                                   " (", info->nbytes(), " dense), in \"", info->file, "\"; expected ", wanted));
  }
  if (!info->aligned()) {
    reasons.push_back(str_cat(what, " is misaligned: it starts at byte ", info->file_offset, " of \"", info->file,
                                   "\", expected a multiple of ", dtype_size(info->dtype)));
  }
  if (expected.check_finite && info->dtype == Dtype::kF32 && info->contiguous() && info->aligned()) {
    std::span<const uint8_t> bytes = checkpoint.bytes(*info);
    int64_t count = info->elements(), bad = 0, first = -1;
    // Only the entries a rank can read: an A_log longer than the heads keeps unused entries.
    if (expected.at_least) count = std::min<int64_t>(count, expected.shape[0]);
    for (int64_t i = 0; i < count; ++i) {
      float value;
      std::memcpy(&value, bytes.data() + 4 * i, 4);
      if (!std::isfinite(value)) {
        if (first < 0) first = i;
        ++bad;
      }
    }
    if (bad > 0) {
      reasons.push_back(str_cat(what, " holds ", bad, " non-finite value", bad > 1 ? "s" : "", " (first at index ",
                                     first, "); expected finite fp32"));
    }
  }
}

// The limits of the kernels' builds (k1_build, k2_build) that the config decides, so that what the
// checks accept, construction builds (model/kernel_limits.h).
void kernel_shape_reasons(const ModelConfig& c, std::vector<std::string>& reasons) {
  if (c.hidden_size % kKernelHiddenMultiple != 0) {
    reasons.push_back(str_cat("config: hidden_size is ", c.hidden_size, "; expected a multiple of ",
                              kKernelHiddenMultiple, " (the kernels' GEMV step)"));
  }
  if (c.routed_expert_hidden_size % kKernelWidthMultiple != 0) {
    reasons.push_back(str_cat("config: routed_expert_hidden_size is ", c.routed_expert_hidden_size,
                              "; expected a multiple of ", kKernelWidthMultiple, " (an MXFP4 group)"));
  }
  if (c.num_experts_per_token < 1 || c.num_experts_per_token > c.num_experts) {
    reasons.push_back(str_cat("config: num_experts_per_token is ", c.num_experts_per_token, "; expected 1..",
                              c.num_experts, " (num_experts)"));
  }
  int most = 0, at = -1;
  for (int layer = 0; layer < c.num_hidden_layers; ++layer) {
    if (c.served_kind(layer) == ServedKind::kNone) continue;
    // A block-write layer's MLP AttnRes reads the block its attention half closed as well.
    const int sources = c.previous_blocks(layer) + (c.is_block_write_layer(layer) ? 1 : 0) + 1;
    if (sources > most) most = sources, at = layer;
  }
  if (most > kKernelAttnResSources) {
    reasons.push_back(str_cat("config: layer ", at, " reads ", most - 1, " AttnRes blocks (attn_res_block_size ",
                              c.attn_res_block_size, ", num_hidden_layers ", c.num_hidden_layers, "); expected at most ",
                              kKernelAttnResSources - 1));
  }
}

}  // namespace

std::vector<std::string> config_reasons(const ModelConfig& c) {
  std::vector<std::string> reasons;
  bool any_served = false;
  for (int layer = 0; layer < c.num_hidden_layers; ++layer) any_served |= c.served_kind(layer) != ServedKind::kNone;
  if (!any_served) reasons.push_back("config: no layer has an AttnRes latent MoE");
  if (c.routed_scaling_factor != 1.0) {
    reasons.push_back(str_cat("config: routed_scaling_factor is ", c.routed_scaling_factor,
                                   "; expected 1.0 (the kernels apply no scaling)"));
  }
  if (c.routed_expert_hidden_size <= 0 || c.num_shared_experts <= 0 || !c.latent_moe_use_norm) {
    reasons.push_back(str_cat("config: needs a latent MoE with shared experts and routed_expert_norm; found "
                                   "routed_expert_hidden_size ", c.routed_expert_hidden_size, ", num_shared_experts ",
                                   c.num_shared_experts, ", latent_moe_use_norm ", c.latent_moe_use_norm));
  }
  if (c.mxfp4_group_size != 32) {
    reasons.push_back("config: the routed experts must be MXFP4 (quantization_config compressed-tensors, 4-bit float, "
                      "group 32); found none");
  }
  if (c.hidden_act != "situ") {
    reasons.push_back(str_cat("config: hidden_act is \"", c.hidden_act, "\"; expected \"situ\""));
  }
  if (c.router_activation != "sigmoid") {
    reasons.push_back(str_cat("config: moe_router_activation_func is \"", c.router_activation,
                                   "\"; expected \"sigmoid\""));
  }
  if (c.kda_head_dim != kKernelHeadDim || c.conv_size != kKernelConvSize || !c.use_full_rank_gate) {
    reasons.push_back(str_cat("config: KDA head_dim ", c.kda_head_dim, ", short_conv_kernel_size ", c.conv_size,
                                   ", use_full_rank_gate ", c.use_full_rank_gate, "; expected ", kKernelHeadDim, ", ",
                                   kKernelConvSize, ", true"));
  }
  kernel_shape_reasons(c, reasons);
  return reasons;
}

std::vector<std::string> weight_reasons(const ModelConfig& config, const RankPlan& plan, const Checkpoint& checkpoint) {
  std::vector<std::string> reasons = config_reasons(config);
  std::set<std::string> seen;
  for (const LayerPlan& layer : plan.layers) {
    for (const ExpectedTensor& expected : layer.expected) {
      if (!seen.insert(expected.name).second) continue;
      check_tensor(layer.layer, expected, checkpoint, reasons);
    }
  }
  return reasons;
}

}  // namespace monotile::model
