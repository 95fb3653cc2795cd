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
// The hidden size is a whole number of the GEMVs' K steps (256 on NVIDIA, 128 on AMD).
inline constexpr int kKernelHiddenMultiple = 256;
// MXFP4 scales and the GEMVs' narrowest K step cover 32 elements: the latent, the experts' and the
// shared experts' intermediates and o_proj's input on a rank are multiples of it.
inline constexpr int kKernelWidthMultiple = 32;
// AttnRes sources in one tile (the blocks before a layer and the running prefix), padded to the
// matrix unit's 16 rows: a served layer reads at most 15 blocks.
inline constexpr int kKernelAttnResSources = 16;

}  // namespace monotile::model
