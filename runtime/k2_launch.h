// K2's host-side binding (kernels/k3/k2.h): the device tensors it reads and writes, its arguments
// in the program's parameter order, how many program instances run it, and the buffers a launch
// owns: the scratch (its control words zeroed once, when it is made, never between launches), the
// health words, the alarm and the epoch (launch_state.h; an executor's launches share one set), and
// for a stage_clock build the clock words.
// After a launch, check_health turns a wait that gave up into an error naming its K2Region.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jit/jit.h"
#include "kernels/k3/k2.h"
#include "kernels/k3/peer_exchange.h"
#include "runtime/device.h"
#include "runtime/kernel.h"
#include "runtime/launch_state.h"
#include "runtime/parameter_order.h"

namespace monotile::runtime {

// Where K2's tensors live: device addresses, and strides in elements (k2.h's parameter list).
struct K2Tensors {
  DevicePtr core =
      0;              // bf16 [T, core_width]: o_proj's input (K1's core, or MLA's attention output)
  DevicePtr w_o = 0;  // bf16 [H, core_width]: o_proj
  DevicePtr prefix = 0;  // bf16 [T, H], updated in place: P' = P + a (a at a block-write layer)
  DevicePtr blocks =
      0;  // bf16: blocks[t, b, c] at t * blocks_token_stride + b * blocks_block_stride + c
  int64_t blocks_token_stride = 0;
  int64_t blocks_block_stride = 0;
  DevicePtr mlp_res_norm = 0;   // bf16 [H]
  DevicePtr mlp_res_proj = 0;   // bf16 [H]
  DevicePtr post_norm = 0;      // bf16 [H]: post_attention_layernorm
  DevicePtr w_gate = 0;         // bf16 [E, H]: the router
  DevicePtr gate_bias = 0;      // f32 [E]: e_score_correction_bias
  DevicePtr w_ld = 0;           // bf16 [LAT, H]: routed_expert_down_proj (the latent)
  DevicePtr w_gu = 0;           // bf16 [2 SI, H]: the shared experts' gate_up_proj
  DevicePtr w_sd = 0;           // bf16 [H, SI]: the shared experts' down_proj
  DevicePtr w13 = 0;            // u8 [E, 2 Ir, LAT/2]: MXFP4 codes, the checkpoint's layout
  DevicePtr w13_scale = 0;      // u8 [E, 2 Ir, LAT/32]
  DevicePtr w2 = 0;             // u8 [E, LAT, Ir/2]
  DevicePtr w2_scale = 0;       // u8 [E, LAT, Ir/32]
  DevicePtr latent_norm = 0;    // bf16 [LAT]: routed_expert_norm
  DevicePtr w_up = 0;           // bf16 [up_rows, LAT]: this rank's routed_expert_up_proj rows
  DevicePtr out = 0;            // bf16 [T, H]: the MoE output, the next layer's delta
  DevicePtr route_experts = 0;  // i32 [T, top_k]
  DevicePtr route_weights = 0;  // f32 [T, top_k]
};

// Program instances K2 runs with on `device`: one per compute unit on a GPU (K2 is persistent, all
// instances resident), 8 on the CPU device (one host thread each; any count >= 1 is correct).
int k2_programs(const DeviceInfo& device, const kernels::k3::K2Build& build);

// The name of a K2Region in messages ("the MLP AttnRes", "o_proj's output a", ...); "" for another
// id.
std::string k2_region_name(int32_t region);

// K2's program as a Kernel on `device`: on a GPU lowered and compiled through `jit`, on the CPU
// device added to the interpreter's process catalog (launch_state.h load_program). `build` should
// come from k2_for_target(build, device.info().target).
absl::StatusOr<Kernel> load_k2(Device& device, const kernels::k3::K2Build& build, jit::Jit& jit);

class K2Launch {
 public:
  // Allocates the scratch of k2_scratch(build) with [0, zeroed_bytes) zeroed, and the health words
  // for `programs` instances (>= 1), the alarm and the epoch, all zeroed; with build.stage_clock,
  // the clock words i64 [programs, kK2ClockPoints] too, zeroed once. `build` is the one launched:
  // after k2_for_target.
  // With `kernel`, the build's loaded kernel, its parameters are taken from it: without,
  // k2_parameters(build) makes the whole program again to learn them. The kernel may come from
  // another build of the same name (k2_name): the launch passes this build's nblocks and reset,
  // nblocks refused (InvalidArgument) outside 0..max_blocks.
  static absl::StatusOr<K2Launch> create(Device& device, const kernels::k3::K2Build& build,
                                         int programs, const Kernel* kernel = nullptr);
  // The same with the health words, alarm and epoch of `state`, shared with other launches (an
  // executor's layers share one epoch and one set of health words); programs() is state's. With
  // `stream`, the scratch is zeroed on it (ordered before the launches the host enqueues there)
  // instead of synchronously.
  static absl::StatusOr<K2Launch> create(Device& device, const kernels::k3::K2Build& build,
                                         std::shared_ptr<LaunchState> state,
                                         const Kernel* kernel = nullptr, Stream* stream = nullptr);

  // The arguments in k2_parameters(build) order; `layer` (0..127) gives the tag slot 128 + layer
  // (K1 of the same layer uses slot `layer`, so their flags never carry the same tag).
  LaunchArguments arguments(const K2Tensors& tensors, int layer) const;

  // Writes the step's epoch word (synchronous). Flags carry step_tag(epoch, 128 + layer), so a
  // launch reusing the scratch needs a new (epoch, layer) pair.
  absl::Status set_epoch(int32_t epoch) { return state_->set_epoch(epoch); }

  // Launches on `stream` over programs() instances, after checking the kernel is this build's and
  // the layer is in 0..127; the arguments are packed into the binding's own storage (nothing is
  // allocated). Not concurrently with another launch of this binding.
  absl::Status launch(const Kernel& kernel, const K2Tensors& tensors, int layer,
                      Stream& stream) const;

  // After the launch has finished: the records of every wait that gave up (regions are
  // kernels::k3::K2Region), or the copy's error.
  absl::StatusOr<std::vector<WaitRecord>> failed_waits() const { return state_->failed_waits(); }
  // OK, or Internal naming each failed wait (K2Region, flag index, expected and seen tag, program).
  absl::Status check_health() const;

  int programs() const { return state_->programs(); }
  const kernels::k3::K2Build& build() const { return build_; }
  const kernels::k3::K2Scratch& layout() const { return layout_; }
  DevicePtr scratch() const { return scratch_.address(); }
  // i32 [health_words(programs)]: word 0 FAILED, then one 8-word record per program (k1.h).
  DevicePtr health() const { return state_->health(); }
  // o_proj's output a [T, H] bf16, reduced, the launch left in the scratch.
  DevicePtr a_rows() const { return scratch_.address() + static_cast<DevicePtr>(layout_.a_rows); }
  // The MLP AttnRes output y [T, H] bf16 the launch left in the scratch.
  DevicePtr y_rows() const { return scratch_.address() + static_cast<DevicePtr>(layout_.y_rows); }
  // i64 [programs, kK2ClockPoints]: the stage clock's points (k2_clock.h; build.stage_clock only).
  DevicePtr clock() const { return clock_.address(); }

 private:
  // Every value a K2 build may take, by parameter name (the build's parameters pick theirs).
  static constexpr size_t kTableSize = 45 + kernels::k3::kMaxExchangeRanks;
  using Table = std::array<NamedArgument, kTableSize>;

  explicit K2Launch(std::shared_ptr<LaunchState> state) : state_(std::move(state)) {}
  Table table(const K2Tensors& tensors, int layer) const;

  std::shared_ptr<LaunchState> state_;
  ParameterOrder order_;  // the build's parameters in the table, resolved by create
  // The launch's argument storage, made by create (packed there once against the kernel's
  // signature when it is given) and packed again in place by every launch: a launch allocates
  // nothing. Launches of one binding therefore come from one thread at a time (an executor's step).
  mutable PackedArguments packed_;
  kernels::k3::K2Build build_;
  kernels::k3::K2Scratch layout_;
  DeviceBuffer scratch_;
  DeviceBuffer clock_;  // only with build.stage_clock
};

}  // namespace monotile::runtime
