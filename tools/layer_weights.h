// The weights `monotile layer` runs one layer on one TP rank with: a checkpoint folder, or an
// embedded config with seeded weights (model/seeded_weights.h, the values `monotile model tiny`
// writes for the same seed; at k3's size only the requested rank's slices are made). Only the
// tensors the stage's kernels read are loaded (K1's, K2's, the MXFP4 experts as their bytes).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/reference/k3_layer_reference.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/shard_plan.h"

namespace monotile::tools {

// What `layer run` runs: K1 alone (a KDA layer's attention half), or the layer: K1 then K2 on a
// KDA layer, K2 alone on an MLA layer (an FFN layer: the host's attention output given).
enum class LayerStage { kK1, kLayer };

struct LayerModel {
  model::ModelConfig config;
  model::RankDims dims;
  int layer = 0;
  LayerStage stage = LayerStage::kLayer;
  model::LayerPlan plan;  // the rank's tensors of the layer that the stage's kernels read
  std::unique_ptr<model::TensorSource> source;
  std::string weights;    // "checkpoint DIR" or "seeded weights of k3-tiny (seed 1)"

  bool kda() const { return config.is_kda_layer(layer); }
  bool runs_k1() const { return kda(); }
  bool runs_k2() const { return stage == LayerStage::kLayer; }
  // o_proj's input columns on this rank: KDA's Pl, or MLA's heads x v_head_dim.
  int64_t core_width() const { return kda() ? dims.kda_projection : int64_t{dims.mla_heads} * config.v_head_dim; }
};

// `model` is a folder (config.json and the shards) or an embedded config's name; `seed` applies
// to a name only (default 1). Refused with the reason: an unknown name or unreadable folder, a seed
// given with a folder, a rank outside 0..tp-1, a layer outside the model; for `stage` k1 an MLA
// layer, for the whole layer a layer without the latent MoE (layer 0's dense MLP: K2 does not
// serve it). `experts` (an embedded config only) keeps the config's first `experts` routed experts,
// num_experts_per_token..num_experts, so that a benchmark makes fewer seeded MXFP4 bytes; the
// weights the model keeps are the full model's, as each element is a function of its index.
absl::StatusOr<LayerModel> open_layer_model(const std::string& model, std::optional<uint64_t> seed, int tp, int rank,
                                            int layer, LayerStage stage,
                                            std::optional<int> experts = std::nullopt);

// One per-rank tensor's bytes as the kernels read it (the plan's dtype); refused naming the tensor.
absl::StatusOr<std::vector<uint8_t>> load_tensor(const LayerModel& model, const std::string& name);

// The rank's tensors of the plan as doubles (MXFP4 as bytes), for the float64 reference.
absl::StatusOr<kernels::reference::RankLayerWeights> load_reference_weights(const LayerModel& model);

}  // namespace monotile::tools
