// A rank's weights made on the device by a random fill (kernels/standins/random_fill.h), one layer
// per kind: layers whose tensors have the same names, dtypes and shapes (K3: layer 0's dense KDA
// layer, the KDA MoE layers, the MLA layers) all view the first such layer's buffers. Each layer is
// far larger than the L2, so a step reads every layer's weights from HBM as a real model would,
// while one rank's K3 (over 100 GB) never needs to fit the GPU. Values by role from the
// distributions model::SeededWeights draws from too (model/weight_roles.h): norms near 1,
// projections of variance 1/fan-in (the rank's slice), A_log in [0, ln 16), small dt_bias and
// router bias, conv weights in [-0.5, 0.5), MXFP4 bytes uniform with E8M0 scale codes that give
// rows of ~1/sqrt(fan-in).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "jit/jit.h"
#include "kernels/reference/k3_layer_reference.h"
#include "model/config.h"
#include "model/shard_plan.h"
#include "runtime/decode/weight_reasons.h"
#include "runtime/device.h"
#include "runtime/kernel.h"

namespace monotile::tools {

class AliasedWeights {
 public:
  // Fills one layer of each kind of `plan`'s layers (the model-level tensors excluded) on
  // `device` from `seed`, and views it from every layer of that kind. `config` and `plan` must
  // outlive the result.
  static absl::StatusOr<std::unique_ptr<AliasedWeights>> create(runtime::Device& device,
                                                                jit::Jit& jit,
                                                                const model::ModelConfig& config,
                                                                const model::RankPlan& plan, int tp,
                                                                int rank, uint64_t seed);

  // Every layer's views (the executor's and the stand-ins' weights).
  const runtime::decode::Backbone& backbone() const { return backbone_; }
  // The layer whose buffers `layer` views.
  int source_layer(int layer) const { return source_.at(layer); }
  int kinds() const { return static_cast<int>(kinds_.size()); }
  // Bytes on the device, and the bytes every layer views (what the model would hold unaliased).
  uint64_t device_bytes() const { return device_bytes_; }
  uint64_t viewed_bytes() const { return viewed_bytes_; }

  // Fills `n` elements of `dtype` (BF16, F32 or U8) at `address` with low + span * u as the weights
  // are filled, the stream of values named by `name` under the seed; returns when done. For other
  // large random tensors of the run (the KV caches).
  absl::Status fill(runtime::DevicePtr address, model::Dtype dtype, int64_t n,
                    std::string_view name, float low, float span);

  // `layer`'s weights for the float64 reference: the kind's layer copied back from the device once
  // and shared by every layer of the kind.
  absl::StatusOr<std::shared_ptr<const kernels::reference::RankLayerWeights>> host_weights(
      int layer);

 private:
  AliasedWeights() = default;
  absl::Status launch_fill(runtime::DevicePtr address, model::Dtype dtype, int64_t n,
                           std::string_view name, float low, float span);
  runtime::Device* device_ = nullptr;
  const model::RankPlan* plan_ = nullptr;
  uint64_t seed_ = 0;
  // The fill program of each element type, and the stream the fills run on.
  std::map<model::Dtype, std::pair<runtime::Kernel, dsl::ScalarType>> programs_;
  runtime::Stream stream_;
  runtime::decode::Backbone backbone_;
  std::vector<runtime::DeviceBuffer> buffers_;
  std::map<int, int> source_;  // layer -> the layer it views
  std::vector<int> kinds_;     // the filled layers
  std::map<int, std::shared_ptr<const kernels::reference::RankLayerWeights>>
      host_;  // by filled layer
  uint64_t device_bytes_ = 0, viewed_bytes_ = 0;
};

}  // namespace monotile::tools
