// The KV-state checks, collected per layer (seed_source.md 1.5; K1's parameters, kernels/k3/k1.h).
#include "runtime/decode/cache_reasons.h"

#include "model/str_cat.h"

namespace monotile::runtime::decode {
namespace {

using model::Dtype;
using model::str_cat;

void recurrent_reasons(const std::string& where, const TensorView& state, int heads, int head_dim,
                       std::vector<std::string>& reasons) {
  if (state.dtype != Dtype::kF32) {
    reasons.push_back(str_cat(where, "recurrent state dtype ", model::dtype_name(state.dtype),
                              ": expected F32 (mamba_ssm_cache_dtype \"float32\")"));
    return;
  }
  std::vector<int64_t> slot_shape = {heads, head_dim, head_dim};
  int64_t slot = int64_t{heads} * head_dim * head_dim;
  bool shape_ok = state.shape.size() == 4 && state.strides.size() == 4 &&
                  std::vector<int64_t>(state.shape.begin() + 1, state.shape.end()) == slot_shape;
  if (!shape_ok) {
    reasons.push_back(str_cat(where, "recurrent state ", describe(state), ": expected [slots, ",
                              heads, ", ", head_dim, ", ", head_dim,
                              "] (V-first, NHl heads of this rank)"));
    return;
  }
  TensorView one = state;
  one.shape[0] = 1;
  if (!one.contiguous()) {
    reasons.push_back(str_cat(where, "a slot's recurrent state must be dense: found ",
                              describe(state), ", expected strides [*, ",
                              int64_t{head_dim} * head_dim, ", ", head_dim, ", 1]"));
  }
  int64_t slot_stride = state.strides[0];
  if (state.shape[0] > 1 && (slot_stride < slot || slot_stride % 4 != 0)) {
    reasons.push_back(str_cat(where, "recurrent slot stride ", slot_stride,
                              ": expected a multiple of 4 of at least ", slot,
                              " (the kernel's state_slot_stride)"));
  }
}

// Returns the conv state_len, or -1 when the shape is neither layout.
int64_t conv_reasons(const std::string& where, const TensorView& conv, int64_t channels, int q,
                     std::vector<std::string>& reasons) {
  if (conv.dtype != Dtype::kBF16) {
    reasons.push_back(
        str_cat(where, "conv state dtype ", model::dtype_name(conv.dtype),
                ": expected BF16 (mamba_cache_dtype \"bfloat16\" or the model's dtype)"));
  }
  if (conv.shape.size() != 3 || conv.strides.size() != 3 ||
      (conv.shape[2] != channels && conv.shape[1] != channels)) {
    reasons.push_back(str_cat(where, "conv state ", describe(conv),
                              ": expected channels-last [slots, state_len, ", channels,
                              "] or dim-first [slots, ", channels, ", state_len]"));
    return -1;
  }
  bool channels_last = conv.shape[2] == channels;
  int64_t state_len = channels_last ? conv.shape[1] : conv.shape[2];
  int64_t channel_stride = channels_last ? conv.strides[2] : conv.strides[1];
  int64_t entry_stride = channels_last ? conv.strides[1] : conv.strides[2];
  if (state_len < q + 2) {
    reasons.push_back(str_cat(where, "conv state_len ", state_len, " (", describe(conv),
                              "): expected at least q + 2 = ", q + 2,
                              " (short_conv_kernel_size - 1 + num_speculative_tokens)"));
  }
  if (channel_stride <= 0 || entry_stride <= 0 || conv.strides[0] <= 0) {
    reasons.push_back(str_cat(where, "conv state strides ", shape_text(conv.strides),
                              ": expected positive strides (slot, channel and entry)"));
  } else if (conv.shape[0] > 1 && conv.strides[0] < (channels - 1) * channel_stride +
                                                        (state_len - 1) * entry_stride + 1) {
    reasons.push_back(str_cat(where, "conv slot stride ", conv.strides[0],
                              " lets slots overlap: expected at least ",
                              (channels - 1) * channel_stride + (state_len - 1) * entry_stride + 1,
                              " for ", describe(conv)));
  }
  return state_len;
}

}  // namespace

std::vector<std::string> cache_reasons(const std::vector<KdaCache>& caches,
                                       const model::ModelConfig& config,
                                       const model::RankDims& dims, int q) {
  std::vector<std::string> reasons;
  int64_t channels = 3 * dims.kda_projection;
  for (const KdaCache& cache : caches) {
    std::string where = str_cat("layer \"", cache.layer, "\": ");
    conv_reasons(where, cache.conv, channels, q, reasons);
    recurrent_reasons(where, cache.recurrent, dims.kda_heads, config.kda_head_dim, reasons);
    if (std::string off = misalignment(cache.conv); !off.empty())
      reasons.push_back(str_cat(where, "conv state", off));
    if (std::string off = misalignment(cache.recurrent); !off.empty()) {
      reasons.push_back(str_cat(where, "recurrent state", off));
    }
    if (!cache.conv.shape.empty() && !cache.recurrent.shape.empty() &&
        cache.conv.shape[0] != cache.recurrent.shape[0]) {
      reasons.push_back(str_cat(where, "conv state has ", cache.conv.shape[0],
                                " slots, recurrent state ", cache.recurrent.shape[0],
                                ": expected one slot count for the pair"));
    }
  }
  return reasons;
}

}  // namespace monotile::runtime::decode
