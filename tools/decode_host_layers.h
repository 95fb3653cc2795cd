// The host's layers in `monotile decode`, as stand-ins named as such: what vLLM runs itself around
// the executor's kernels. Each is the float64 reference with the stock path's bf16 rounding points,
// run on the CPU over copies of the device tensors:
//   - a layer the executor does not serve (layer 0: KDA attention and the dense MLP), whole;
//   - an MLA layer's host half: the delta folded into the prefix, the attention AttnRes, and the
//     MLA attention up to o_proj over a small latent KV cache, giving o_proj's input.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/reference/k3_layer_reference.h"
#include "kernels/reference/mla_attention.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/shard_plan.h"
#include "runtime/decode/specialized_decode.h"
#include "runtime/device.h"

namespace monotile::tools {

// A KDA layer's caches on the device: conv channels last [slots, state_len, 3 Pl] bf16, recurrent
// [slots, NHl, 128, 128] f32.
struct DeviceKdaCache {
  runtime::DeviceBuffer conv, state;
  int64_t slots = 0, state_len = 0, channels = 0, state_elements = 0;
};

// The step as the stand-ins see it.
struct HostStep {
  int q = 0;
  std::vector<int32_t> state_indices;  // [N, q]
  std::vector<int32_t> num_accepted;   // [N]
  std::vector<int32_t> mla_slots;      // [N]: the request's MLA cache slot (< 0: padded)
  std::vector<int64_t> mla_context;    // [N]: tokens already in it
  int rows() const { return static_cast<int>(state_indices.size()); }
};

class HostLayers {
 public:
  HostLayers(runtime::Device& device, const model::ModelConfig& config, const model::RankDims& dims,
             const model::RankPlan& plan, const model::TensorSource& source, int max_rows, int64_t mla_slots,
             int64_t mla_capacity);

  // Layer `layer` whole, on the step's tensors: prefix and blocks updated, io.delta pointed at its
  // MoE output (a buffer of this object), a KDA layer's caches updated.
  absl::Status run_layer(int layer, runtime::decode::LayerIo& io, const HostStep& step, DeviceKdaCache* cache,
                         runtime::Stream& stream);

  // An MLA layer's host half (LayerIo::attention): folds the delta into the prefix, and returns
  // o_proj's input [T, NHl v_head_dim] (a buffer of this object). Also keeps the attention's
  // output a = o_proj(core) for check_layer (attention_output).
  absl::StatusOr<runtime::DevicePtr> attention(int layer, const runtime::decode::LayerIo& io, const HostStep& step,
                                               runtime::Stream& stream);

  // The rank's weights of `layer` as doubles (loaded once).
  absl::StatusOr<const kernels::reference::RankLayerWeights*> weights(int layer);
  const std::vector<double>& last_attention_output() const { return attention_output_; }

  // Device <-> host through the device's synchronous copies (after synchronizing `stream`).
  absl::StatusOr<std::vector<double>> read_bf16(runtime::DevicePtr address, size_t count, runtime::Stream& stream);
  absl::Status write_bf16(runtime::DevicePtr address, const std::vector<double>& values);
  absl::StatusOr<kernels::reference::KdaCache> read_cache(const DeviceKdaCache& cache, runtime::Stream& stream);
  absl::Status write_cache(const DeviceKdaCache& cache, const kernels::reference::KdaCache& values);

 private:
  runtime::Device* device_;
  const model::ModelConfig* config_;
  model::RankDims dims_;
  const model::RankPlan* plan_;
  const model::TensorSource* source_;
  int max_rows_;
  std::map<int, std::unique_ptr<kernels::reference::RankLayerWeights>> weights_;
  std::map<int, kernels::reference::MlaCache> mla_caches_;
  int64_t mla_slots_, mla_capacity_;
  runtime::DeviceBuffer out_, core_;
  std::vector<double> attention_output_;
};

}  // namespace monotile::tools
