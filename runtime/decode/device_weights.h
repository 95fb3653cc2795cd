// A rank's weights on a device, as the executor reads them: every tensor of the layers in a range
// that model::plan_rank gives the rank, read from a checkpoint or seeded weights, uploaded once,
// and described as the Backbone's views. The C++ host's way to load a model for SpecializedDecode
// (`monotile decode`, the executor's tests); a host that already holds its weights on the device
// (vLLM) describes them as TensorViews itself.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "runtime/decode/weight_reasons.h"
#include "runtime/device.h"

namespace monotile::runtime::decode {

struct DeviceWeights {
  Backbone backbone;                  // views into `buffers`
  std::vector<DeviceBuffer> buffers;  // one per tensor
  uint64_t bytes = 0;
};

// Layers [start_layer, end_layer) of rank `rank` of TP `tp`. `config` must outlive the result.
// Refused, naming the tensor: what plan_rank or model::load_rank_tensor refuse.
absl::StatusOr<DeviceWeights> upload_rank_weights(Device& device, const model::ModelConfig& config, int tp, int rank,
                                                  int start_layer, int end_layer, const model::TensorSource& source);

}  // namespace monotile::runtime::decode
