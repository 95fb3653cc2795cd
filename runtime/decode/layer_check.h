// One served layer of an executor step against the float64 reference of that layer, on the inputs
// the launch had (prefix, blocks, delta, caches, the MLA attention output): the prefix and blocks
// after it, the KDA caches, and the MoE output on the rows whose top-k is clear of near-ties (a
// swapped expert changes a row; the K2 tests judge swaps with the margin). `monotile decode
// --check` prints these; the executor's tests assert them.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/k3/k1_check.h"
#include "kernels/reference/k3_layer_reference.h"
#include "model/config.h"

namespace monotile::runtime::decode {

// What the kernels left after the layer, as values (bf16 and f32 widened).
struct LayerResult {
  std::vector<double> prefix, blocks, out;     // [T, H], [T, blocks, H], [T, H]
  kernels::reference::KdaCache cache;          // KDA layers: the rank's caches after the step
};

struct LayerCheck {
  std::vector<kernels::k3::OutputCheck> outputs;
  int rows = 0, clear_rows = 0;  // rows of the step, rows whose MoE output was judged
  bool passed() const;
  // The worst error over the outputs, in bf16 ulps (large near zero) and as a share of the
  // output's RMS.
  double worst_ulps() const;
  double worst_rms() const;
};

// `input` as layer_reference takes it (one rank: TP 1). Refused as layer_reference refuses.
absl::StatusOr<LayerCheck> check_layer(const model::ModelConfig& config, int layer,
                                       const kernels::reference::RankLayerWeights& weights,
                                       const kernels::reference::LayerInput& input, const LayerResult& result,
                                       kernels::reference::InProjInput in_proj_input =
                                           kernels::reference::InProjInput::kRoundedX);

// The same for rank `rank` of a TP group of ranks.size() ranks: the reference sums every rank's
// partials (input.caches holds every rank's caches, KDA layers), `result` is that rank's.
absl::StatusOr<LayerCheck> check_layer(const model::ModelConfig& config, int layer,
                                       std::span<const kernels::reference::RankLayerWeights> ranks,
                                       const kernels::reference::LayerInput& input, const LayerResult& result,
                                       int rank,
                                       kernels::reference::InProjInput in_proj_input =
                                           kernels::reference::InProjInput::kRoundedX);

}  // namespace monotile::runtime::decode
