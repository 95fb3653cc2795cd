// The stand-in of a whole KDA layer with a dense MLP (layer 0, which the executor does not serve)
// on a device, as launches on one stream: the epoch bump and K1 (kernels/k3/k1.h: the AttnRes with
// its block write, the KDA half up to o_proj's input), then simple stand-in kernels: o_proj,
// P' = a at a block write or bf16(P + a), the MLP AttnRes with post_attention_layernorm, and the
// dense MLP (gate_up, SiTU, down). The TP reductions of a and m are the caller's (launch's
// `reduce`); without one, one rank alone, they are its partials.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "dsl/target.h"
#include "jit/jit.h"
#include "kernels/k3/k1.h"
#include "kernels/standins/standin_launch.h"
#include "model/config.h"
#include "runtime/device.h"
#include "runtime/k1_launch.h"

namespace monotile::kernels::standins {

// Where the layer's step lives on the device (strides in elements).
struct KdaMlpTensors {
  runtime::DevicePtr prefix = 0;  // bf16 [T, H]: P in, P' out
  runtime::DevicePtr delta = 0;   // bf16 [T, H]; only for a layer created with a delta
  runtime::DevicePtr blocks = 0;  // bf16 blocks[t, b, c]
  int64_t blocks_token_stride = 0, blocks_block_stride = 0;
  runtime::DevicePtr conv_state = 0;     // bf16 channels last [slots, state_len, 3 Pl]
  runtime::DevicePtr state = 0;          // f32 V-first [slots, NHl, 128, 128]
  runtime::DevicePtr state_indices = 0;  // i32 [N, q]
  runtime::DevicePtr num_accepted = 0;   // i32 [N]
  runtime::DevicePtr out = 0;            // bf16 [T, H]: m, the MLP's output (the next delta)
};

// What the stand-in loads: K1's build for the device's target and the stand-in kernels after it.
struct KdaMlpPlan {
  kernels::k3::K1Build k1;
  PlannedKernel o_proj, residual, attn_res, gate_up, situ, down;
  // Every program it loads, K1 and the epoch bump included (for precompile).
  std::vector<dsl::Program> programs() const;
};

class KdaMlpStandin {
 public:
  // The plan of create's arguments for `target`. Refused as create refuses (but for the weights).
  static absl::StatusOr<KdaMlpPlan> plan(const model::ModelConfig& config,
                                         const model::RankDims& dims, int layer, int tokens, int q,
                                         int state_len, bool delta, const dsl::Target& target);

  // Loads every program for `tokens` rows of `q` (K1 built by k1_build and k1_for_target for the
  // device's target) and allocates the scratch. Refused: a layer that is not KDA or has MoE, what
  // k1_build refuses, a missing weight.
  static absl::StatusOr<std::unique_ptr<KdaMlpStandin>> create(
      runtime::Device& device, jit::Jit& jit, const model::ModelConfig& config,
      const model::RankDims& dims, int layer, const WeightAddresses& weights, int tokens, int q,
      int state_len, bool delta);

  // A TP reduction of a bf16 tensor [count] on the device, in place, after what `stream` holds
  // (the tool's: through its group, host work between the launches).
  using Reduce =
      std::function<absl::Status(runtime::DevicePtr data, int64_t count, runtime::Stream& stream)>;

  // Enqueues the layer on `stream`. Without `reduce`, nothing is copied to or from the host and a
  // and m are this rank's partials; with it, each is reduced by `reduce` before it is used.
  absl::Status launch(const KdaMlpTensors& tensors, runtime::Stream& stream,
                      const Reduce& reduce = nullptr) const;

  // After the launches finished: OK, or K1's waits that gave up.
  absl::Status check_health() const { return k1_launch_->check_health(); }

  // o_proj's input core [T, Pl] the last launch left (bf16).
  runtime::DevicePtr core() const { return core_.address(); }

 private:
  KdaMlpStandin() = default;
  runtime::Device* device_ = nullptr;
  int layer_ = 0, tokens_ = 0, q_ = 0, state_len_ = 0;
  int64_t hidden_ = 0, projection_ = 0, channels_ = 0, state_slot_stride_ = 0;
  kernels::k3::K1Build build_;
  std::unique_ptr<runtime::K1Launch> k1_launch_;
  std::shared_ptr<runtime::LaunchState> state_;
  std::unique_ptr<runtime::Kernel> k1_, step_begin_;
  std::unique_ptr<StandinKernel> o_proj_, residual_, attn_res_, gate_up_, situ_, down_;
  runtime::K1Tensors k1_weights_;
  runtime::DevicePtr w_o_ = 0, mlp_res_norm_ = 0, mlp_res_proj_ = 0, post_norm_ = 0, w_gu_ = 0,
                     w_down_ = 0;
  runtime::DeviceBuffer core_, a_, y_, gu_, act_;
};

}  // namespace monotile::kernels::standins
