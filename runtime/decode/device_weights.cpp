// Uploading a rank's weights; see device_weights.h.
#include "runtime/decode/device_weights.h"

#include "model/shard_plan.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {

absl::StatusOr<DeviceWeights> upload_rank_weights(Device& device, const model::ModelConfig& config, int tp, int rank,
                                                  int start_layer, int end_layer, const model::TensorSource& source) {
  MT_ASSIGN_OR_RETURN(model::RankPlan plan, model::plan_rank(config, tp, rank));
  DeviceWeights weights;
  weights.backbone = {.config = &config, .tp = tp, .rank = rank, .start_layer = start_layer, .end_layer = end_layer, .weights = {},
                      .experts_layout = std::string(kCheckpointExpertsLayout)};
  for (const model::LayerPlan& layer : plan.layers) {
    if (layer.layer < start_layer || layer.layer >= end_layer) continue;
    auto& views = weights.backbone.weights[layer.layer];
    for (const model::RankTensor& tensor : layer.tensors) {
      MT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, model::load_rank_tensor(tensor, source));
      MT_ASSIGN_OR_RETURN(DeviceBuffer buffer, device.allocate(bytes.size()));
      MT_RETURN_IF_ERROR(device.copy_to_device(buffer.address(), bytes.data(), bytes.size()));
      views[tensor.name] = TensorView::dense(tensor.dtype, tensor.shape, buffer.address());
      weights.bytes += bytes.size();
      weights.buffers.push_back(std::move(buffer));
    }
  }
  return weights;
}

}  // namespace monotile::runtime::decode
