// What the K3 layer kernels (kernels/k3) are written for, beyond the config's own values: the
// deployment check, model::config_reasons and the kernels' builds read these, so that a config
// the checks accept is one the kernels serve.
#pragma once

namespace monotile::model {

// KDA's head dimension and short-conv width.
inline constexpr int kKernelHeadDim = 128;
inline constexpr int kKernelConvSize = 4;
// Rows a request verifies (num_speculative_tokens + 1): K1 keeps each token's values live through
// the recurrence, and past 8 tokens a request they spill.
inline constexpr int kKernelMaxQ = 8;

}  // namespace monotile::model
