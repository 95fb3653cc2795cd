// K1's host-side binding (kernels/k3/k1.h): the device tensors it reads and writes, its arguments
// in the program's parameter order, how many program instances run it, and the buffers a launch
// owns: the scratch (its control words zeroed once, when it is made), the health words, the alarm
// and the epoch (launch_state.h; an executor's launches share one set). After a launch,
// check_health turns a wait that gave up into an error.
#pragma once

#include <cstdint>
#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jit/jit.h"
#include "kernels/k3/k1.h"
#include "runtime/device.h"
#include "runtime/kernel.h"
#include "runtime/launch_state.h"
#include "runtime/parameter_order.h"

namespace monotile::runtime {

// Where K1's tensors live: device addresses, and strides in elements (k1.h's parameter list).
struct K1Tensors {
  DevicePtr prefix = 0;  // bf16 [T, H], updated in place
  DevicePtr delta = 0;   // bf16 [T, H]; read only when the build folds a delta
  DevicePtr blocks = 0;  // bf16: blocks[t, b, c] at t * blocks_token_stride + b * blocks_block_stride + c
  int64_t blocks_token_stride = 0;
  int64_t blocks_block_stride = 0;
  DevicePtr ares_norm = 0;  // bf16 [H]: self_attention_res_norm
  DevicePtr ares_proj = 0;  // bf16 [H]: self_attention_res_proj
  DevicePtr in_norm = 0;    // bf16 [H]: input_layernorm
  DevicePtr w_in = 0;       // bf16 [rows, H]: the merged in_proj_qkvgfab
  DevicePtr w_fb = 0;       // bf16 [Pl, 128]: f_b_proj
  DevicePtr conv_w = 0;     // f32 [3 Pl, 4]: conv1d
  DevicePtr conv_state = 0; // bf16: entry e of channel c of slot s at s * slot + c * channel + e * entry
  int64_t conv_slot_stride = 0;
  int64_t conv_channel_stride = 0;
  int64_t conv_entry_stride = 0;
  DevicePtr a_log = 0;      // f32 [NHl]
  DevicePtr dt_bias = 0;    // f32 [Pl]
  DevicePtr o_norm = 0;     // bf16 [128]
  DevicePtr state = 0;      // f32 V-first [slots, NHl, 128, 128]
  int64_t state_slot_stride = 0;
  DevicePtr state_indices = 0;  // i32 [N, q], row n at n * state_indices_stride
  int64_t state_indices_stride = 0;
  DevicePtr num_accepted = 0;   // i32 [N]
  DevicePtr core = 0;           // bf16 [T, Pl]
};

// A wait that gave up; its region is a kernels::k3::K1Region.
using K1WaitRecord = WaitRecord;

// Program instances K1 runs with on `device`: one per compute unit on a GPU (K1 is persistent, all
// instances resident), max(tokens, 8) on the CPU device (one host thread each); never fewer than
// build.tokens (any count >= 1 is correct; fewer than the rows only serializes the AttnRes rows).
int k1_programs(const DeviceInfo& device, const kernels::k3::K1Build& build);

// The name of a K1Region in messages ("AttnRes", "x rows", "in_proj"); "" for another id.
std::string k1_region_name(int32_t region);

// K1's program as a Kernel on `device`: on a GPU lowered and compiled through `jit` (the kernel
// cache), on the CPU device added to ProgramCatalog::process(), which discover_devices()'s CPU
// device loads from. `build` should come from k1_for_target(build, device.info().target).
absl::StatusOr<Kernel> load_k1(Device& device, const kernels::k3::K1Build& build, jit::Jit& jit);

class K1Launch {
 public:
  // Allocates the scratch of k1_scratch(build) with [0, zeroed_bytes) zeroed, and the health words
  // for `programs` instances (>= 1), the alarm and the epoch, all zeroed; with build.stage_clock,
  // the clock words i64 [programs, kK1ClockPoints] too. `build` is the one launched: after k1_for_target.
  // With `kernel`, the build's loaded kernel, its parameters are taken from it: without,
  // k1_parameters(build) makes the whole program again to learn them. The kernel may come from
  // another build of the same name (k1_name): the launch passes this build's nblocks and
  // write_index, refused (InvalidArgument) outside 0..max_blocks and -1.. .
  static absl::StatusOr<K1Launch> create(Device& device, const kernels::k3::K1Build& build, int programs,
                                         const Kernel* kernel = nullptr);
  // The same with the health words, alarm and epoch of `state`, shared with other launches (an
  // executor's layers share one epoch and one set of health words); programs() is state's. With
  // `stream`, the scratch is zeroed on it (ordered before the launches the host enqueues there)
  // instead of synchronously.
  static absl::StatusOr<K1Launch> create(Device& device, const kernels::k3::K1Build& build,
                                         std::shared_ptr<LaunchState> state, const Kernel* kernel = nullptr,
                                         Stream* stream = nullptr);

  // The arguments in k1_parameters(build) order; `layer` is the tag slot (0..127).
  LaunchArguments arguments(const K1Tensors& tensors, int layer) const;

  // Writes the step's epoch word (synchronous). Flags carry step_tag(epoch, layer), so a launch
  // reusing the scratch needs a new (epoch, layer) pair.
  absl::Status set_epoch(int32_t epoch) { return state_->set_epoch(epoch); }

  // Launches on `stream` over programs() instances, after checking the kernel is this build's; the
  // arguments are packed into the binding's own storage (nothing is allocated). Not concurrently
  // with another launch of this binding.
  absl::Status launch(const Kernel& kernel, const K1Tensors& tensors, int layer, Stream& stream) const;

  // After the launch has finished: the records of every wait that gave up (empty when word 0 is
  // zero), or the copy's error.
  absl::StatusOr<std::vector<K1WaitRecord>> failed_waits() const { return state_->failed_waits(); }
  // OK, or Internal naming each failed wait (region, flag index, expected and seen tag, program).
  absl::Status check_health() const;

  int programs() const { return state_->programs(); }
  const kernels::k3::K1Build& build() const { return build_; }
  const kernels::k3::K1Scratch& layout() const { return layout_; }
  DevicePtr scratch() const { return scratch_.address(); }
  // i32 [health_words(programs)]: word 0 FAILED, then one 8-word record per program (k1.h).
  DevicePtr health() const { return state_->health(); }
  // The AttnRes output x [T, H] bf16 the launch left in the scratch.
  DevicePtr x_rows() const { return scratch_.address() + static_cast<DevicePtr>(layout_.x_rows); }
  // i64 [programs, kK1ClockPoints]: the stage clock's points (k1.h; build.stage_clock only).
  DevicePtr clock() const { return clock_.address(); }

 private:
  // Every value a K1 build may take, by parameter name (the build's parameters pick theirs).
  static constexpr size_t kTableSize = 37;
  using Table = std::array<NamedArgument, kTableSize>;

  explicit K1Launch(std::shared_ptr<LaunchState> state) : state_(std::move(state)) {}
  Table table(const K1Tensors& tensors, int layer) const;

  std::shared_ptr<LaunchState> state_;
  ParameterOrder order_;  // the build's parameters in the table, resolved by create
  // The launch's argument storage, made by create (packed there once against the kernel's
  // signature when it is given) and packed again in place by every launch: a launch allocates
  // nothing. Launches of one binding therefore come from one thread at a time (an executor's step).
  mutable PackedArguments packed_;
  kernels::k3::K1Build build_;
  kernels::k3::K1Scratch layout_;
  DeviceBuffer scratch_;
  DeviceBuffer clock_;  // only with build.stage_clock
};

}  // namespace monotile::runtime
