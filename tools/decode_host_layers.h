// The host's layers in `monotile decode`, as stand-ins named as such: what vLLM runs itself around
// the executor's kernels.
//   - a layer the executor does not serve (layer 0: KDA attention and the dense MLP), whole, its
//     two TP reductions (o_proj's and the MLP's) through the group when the ranks run together;
//   - an MLA layer's host half: the delta folded into the prefix, the attention AttnRes, and the
//     MLA attention up to o_proj over a small latent KV cache, giving o_proj's input (this rank's
//     heads; no reduction before K2's).
// Two ways, chosen once: the float64 reference with the stock path's bf16 rounding points, run on the
// CPU over copies of the device tensors (the CPU device's default), or simple DSL kernels on the
// device (kernels/standins: K1 and the dense MLP half, the MLA decode kernels), enqueued on the
// step's stream with no host copy (a GPU's default).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jit/jit.h"
#include "kernels/k3/k1_check.h"
#include "kernels/reference/k3_layer_reference.h"
#include "kernels/reference/mla_attention.h"
#include "kernels/standins/kda_mlp_standin.h"
#include "kernels/standins/mla_standin.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/shard_plan.h"
#include "runtime/decode/layer_check.h"
#include "runtime/decode/specialized_decode.h"
#include "runtime/decode/weight_reasons.h"
#include "runtime/device.h"

namespace monotile::tools {

// A KDA layer's caches on the device: conv channels last [slots, state_len, 3 Pl] bf16, recurrent
// [slots, NHl, 128, 128] f32.
struct DeviceKdaCache {
  runtime::DeviceBuffer conv, state;
  int64_t slots = 0, state_len = 0, channels = 0, state_elements = 0;
};

// The step as the stand-ins see it: on the host, and (for the DSL kernels) on the device.
struct HostStep {
  int q = 0;
  std::vector<int32_t> state_indices;  // [N, q]
  std::vector<int32_t> num_accepted;   // [N]
  std::vector<int32_t> mla_slots;      // [N]: the request's MLA cache slot (< 0: padded)
  std::vector<int64_t> mla_context;    // [N]: tokens already in it
  runtime::DevicePtr device_state_indices = 0;  // i32 [N, q]
  runtime::DevicePtr device_num_accepted = 0;   // i32 [N]
  runtime::DevicePtr device_mla_slots = 0;      // i32 [N]
  runtime::DevicePtr device_mla_context = 0;    // i32 [N]
  int rows() const { return static_cast<int>(state_indices.size()); }
};

// How the stand-ins run.
enum class StandinKind { kReference, kKernels };

class HostLayers {
 public:
  // `backbone` holds the rank's weights on `device` (read by the kernels); `source` the same
  // weights for the reference.
  HostLayers(runtime::Device& device, jit::Jit& jit, const model::ModelConfig& config, const model::RankDims& dims,
             const model::RankPlan& plan, const model::TensorSource& source,
             const runtime::decode::Backbone& backbone, StandinKind kind, int max_rows, int64_t mla_slots,
             int64_t mla_capacity);

  // With the DSL kernels: loads (compiles on a GPU) every stand-in for `width` rows of q, for each
  // layer in `host_layers` (run whole) and each MLA layer, and allocates the MLA caches. Nothing
  // for the reference.
  absl::Status prepare(const std::vector<int>& host_layers, int width, int q, int state_len);

  // The TP reductions of the layers run whole (set before the first step): the other ranks of
  // `group` run the same layers at the same points. Without it, at TP > 1, each reduction is this
  // rank's partial (the other ranks' stood in).
  void set_group(runtime::decode::Group* group) { group_ = group; }
  bool reduces() const { return group_ != nullptr && group_->size() > 1; }

  // Layer `layer` whole, on the step's tensors: prefix and blocks updated, io.delta pointed at its
  // MLP output (a buffer of this object), a KDA layer's caches updated. With a group (set_group),
  // its reductions: the reference's through the group; the DSL kernels' by `reduce` between their
  // launches (required then: the caller's host work, see host_all_reduce.h).
  absl::Status run_layer(int layer, runtime::decode::LayerIo& io, const HostStep& step, DeviceKdaCache* cache,
                         runtime::Stream& stream, const kernels::standins::KdaMlpStandin::Reduce& reduce = nullptr);

  // An MLA layer's host half (LayerIo::attention): folds the delta into the prefix, and returns
  // o_proj's input [T, NHl v_head_dim] (a buffer of this object).
  absl::StatusOr<runtime::DevicePtr> attention(int layer, const runtime::decode::LayerIo& io, const HostStep& step,
                                               runtime::Stream& stream);

  // The last MLA layer's attention output a = bf16(o_proj(core)) [T, H] for check_layer (this
  // rank's partial; TP 1 is the whole): kept by the reference, computed from the device's core
  // after the kernels.
  absl::StatusOr<std::vector<double>> attention_output(int layer, int rows, runtime::Stream& stream);

  // After a step's launches finished: OK, or the stand-ins' K1 waits that gave up.
  absl::Status check_health() const;

  // With the DSL kernels (--check): a layer run whole against layer_reference on the inputs it had
  // (P', the blocks, the KDA caches, m; the rules of kernels/k3/k1_check.h). With `ranks`, the
  // layer over every rank of a group (input.caches every rank's), this being rank `rank`.
  absl::StatusOr<std::vector<kernels::k3::OutputCheck>> check_layer(
      int layer, const kernels::reference::LayerInput& input, const runtime::decode::LayerResult& result,
      std::span<const kernels::reference::RankLayerWeights> ranks = {}, int rank = 0);
  // With the DSL kernels (--check), after an MLA layer: its core against mla_attention_reference on
  // the x the kernels computed, over a host copy of the latent cache that the reference appends to
  // at every step (so call it at every step of every MLA layer, or never).
  absl::StatusOr<kernels::k3::OutputCheck> check_attention(int layer, const HostStep& step, runtime::Stream& stream);

  StandinKind kind() const { return kind_; }
  // "reference" or "DSL kernels", for the per-layer table.
  const char* kind_name() const { return kind_ == StandinKind::kKernels ? "DSL kernels" : "reference"; }

  // The rank's weights of `layer` as doubles (loaded once).
  absl::StatusOr<const kernels::reference::RankLayerWeights*> weights(int layer);
  // Where weights() gets a layer's weights when they are not `source`'s (weights made on the device,
  // aliased across layers: shared by the layers of a kind).
  using WeightLoader =
      std::function<absl::StatusOr<std::shared_ptr<const kernels::reference::RankLayerWeights>>(int layer)>;
  void set_weight_loader(WeightLoader loader) { loader_ = std::move(loader); }

  // Device <-> host through the device's synchronous copies (after synchronizing `stream`).
  absl::StatusOr<std::vector<double>> read_bf16(runtime::DevicePtr address, size_t count, runtime::Stream& stream);
  absl::Status write_bf16(runtime::DevicePtr address, const std::vector<double>& values);
  absl::StatusOr<kernels::reference::KdaCache> read_cache(const DeviceKdaCache& cache, runtime::Stream& stream);
  absl::Status write_cache(const DeviceKdaCache& cache, const kernels::reference::KdaCache& values);

 private:
  absl::Status run_layer_reference(int layer, runtime::decode::LayerIo& io, const HostStep& step,
                                   DeviceKdaCache* cache, runtime::Stream& stream);
  absl::StatusOr<runtime::DevicePtr> attention_reference(int layer, const runtime::decode::LayerIo& io,
                                                         const HostStep& step, runtime::Stream& stream);
  kernels::standins::WeightAddresses weight_addresses(int layer) const;
  absl::Status allocate_outputs(size_t core_width);

  runtime::Device* device_;
  jit::Jit* jit_;
  const model::ModelConfig* config_;
  model::RankDims dims_;
  const model::RankPlan* plan_;
  const model::TensorSource* source_;
  const runtime::decode::Backbone* backbone_;
  runtime::decode::Group* group_ = nullptr;
  StandinKind kind_;
  int max_rows_;
  WeightLoader loader_;
  std::map<int, std::shared_ptr<const kernels::reference::RankLayerWeights>> weights_;
  std::map<int, kernels::reference::MlaCache> mla_caches_;
  int64_t mla_slots_, mla_capacity_;
  runtime::DeviceBuffer out_, core_;
  std::vector<double> attention_output_;
  // The DSL kernels' stand-ins, by layer, and the MLA layers' latent caches on the device.
  std::map<int, std::unique_ptr<kernels::standins::KdaMlpStandin>> whole_;
  std::map<int, std::unique_ptr<kernels::standins::MlaStandin>> mla_;
  std::map<int, runtime::DeviceBuffer> device_mla_caches_;
};

}  // namespace monotile::tools
