// SpecializedDecode: the executor. It replaces a rank's KDA decoder layers (K1 then K2) and the FFN
// half of its MLA layers (K2 after the host's attention) with persistent layer kernels, for the
// spec-verify steps that plan() accepts; every other step runs the host's layers. The host calls,
// in this order:
//   SpecializedDecode::create     once the weights are loaded (all ranks; compiles every build),
//   prepare_kv                    after every KV-cache bind (all ranks),
//   plan -> Step                  per forward: nothing (the host's layers) or the step's launches,
//   Step::layer(i)(io, stream)    per decoder layer i the step serves, in layer order,
//   after_step                    once per executed step (all ranks; the fail-stop vote).
// Nothing is compiled or allocated after prepare_kv returns: plan and the launches only enqueue.
// Every device operation of prepare_kv, the launches and after_step is enqueued on the stream the
// host passes (its own, through Device::wrap_stream), and the executor has no stream of its own: a
// host capturing its stream into a graph (vLLM's CUDA graphs) captures the whole step.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jit/compile_all.h"
#include "jit/jit.h"
#include "runtime/decode/decode_config.h"
#include "runtime/decode/group.h"
#include "runtime/decode/step_plan.h"
#include "runtime/decode/weight_reasons.h"
#include "runtime/device.h"

namespace monotile::runtime::decode {

class PeerBuffer;  // peer_buffer.h: not a public header; only construct takes one

class Runner;
class LayerKernel;

// What a layer launch takes and returns, as the host's decoder layer does (the deferred-delta
// form): the residual prefix and the AttnRes blocks, updated in place, and the pending delta in,
// the layer's MoE output out.
struct LayerIo {
  DevicePtr prefix = 0;  // bf16 [width, H]
  DevicePtr blocks = 0;  // bf16: blocks[t, b, c] at t * blocks_token_stride + b * blocks_block_stride + c
  int64_t blocks_token_stride = 0;
  int64_t blocks_block_stride = 0;
  // In: the previous layer's MoE output, not yet added to the prefix (required: a served layer
  // always follows another layer). Out: this layer's MoE output, bf16 [width, H], in a buffer the
  // executor owns; it stays valid until the launch of the layer after next.
  DevicePtr delta = 0;
  // MLA layers only: the host's half of the layer, enqueued on the stream it is given. It folds
  // `delta` into `prefix` in place, runs the AttnRes and the attention up to o_proj, and returns
  // the address of o_proj's input, bf16 [width, heads x v_head_dim of this rank].
  std::function<absl::StatusOr<DevicePtr>(int layer, const LayerIo& io, Stream& stream)> attention;
};

// One served layer's launch in a planned step.
class LayerLaunch {
 public:
  // Enqueues the layer on `stream` (at the step's first served layer, the epoch bump first).
  // Refused before anything is enqueued: no delta, an MLA layer without `attention`, a tensor the
  // kernels would read misaligned (prefix, blocks, delta or the step's metadata not starting on a
  // 16-byte boundary).
  absl::Status operator()(LayerIo& io, Stream& stream) const;

 private:
  friend class Step;
  LayerLaunch(const Runner* runner, const LayerKernel* kernel, const SpecMetadata* meta, int width)
      : runner_(runner), kernel_(kernel), meta_(meta), width_(width) {}
  const Runner* runner_;
  const LayerKernel* kernel_;
  const SpecMetadata* meta_;
  int width_;
};

// A step plan() accepted: `width` rows of whole uniform spec-verify requests.
class Step {
 public:
  int width() const { return plan_.width; }
  // The launch replacing decoder layer `layer`, or nothing for the host's layers.
  std::optional<LayerLaunch> layer(int layer) const;

 private:
  friend class SpecializedDecode;
  Step(PlannedStep plan, const Runner* runner, const SpecMetadata* meta)
      : plan_(plan), runner_(runner), meta_(meta) {}
  PlannedStep plan_;
  const Runner* runner_;
  const SpecMetadata* meta_;  // the routing layer's, resolved once by plan()
};

struct ExecutorOptions {
  int check_every = 16;  // FailStop's vote period, in executed steps
  // How long any in-kernel hand-off wait may last before it gives up and records itself in the
  // health words (0: the kernels' default, 10 s). Part of every build's key.
  int64_t wait_ns = 0;
  int compile_jobs = 0;  // compile_all's threads (0: one per core)
  // Each finished compile (a progress bar on a terminal, a count line otherwise: the host's choice).
  std::function<void(const jit::CompileProgress&)> on_progress;
  // The one-line summaries of construction and of a prepare_kv that compiled (default: stderr
  // through support/log at info level).
  std::function<void(const std::string&)> log;
  // Tests of the fail-stop only (the seed's fault_* build fields): when fault_ns is not 0, this
  // rank's K2 stalls program 0 for fault_ns at the step whose device epoch is fault_epoch, in
  // decoder layer fault_layer, so that its other programs' waits give up into the health words. The
  // host picks the rank by passing a fault to that rank's executor alone.
  int32_t fault_epoch = 0;
  int fault_layer = 0;
  int64_t fault_ns = 0;
  // For the tools' one-rank runs and the executor's tests only: every rank of the group runs alone,
  // the other ranks' partial sums in every reduction stood in by zero (its outputs are then not the
  // layer's; construction's log line says so). Without it a group of more than one rank exchanges
  // partial sums inside K2 over a peer buffer the executor makes (tp_reasons.h says what it needs).
  bool other_ranks_stood_in = false;
  // The program instances of every launch (0: one per compute unit on a GPU, 8 on the CPU device).
  // Ranks sharing one GPU each take their share of its compute units, so that their persistent
  // grids can be resident at once; at least the widest K1 build's rows.
  int programs = 0;
  // K1 and K2 built with dependent_launch (k1.h, k2.h): each launch may start on the SMs the
  // previous kernel frees, bringing its first weights into L2 before it waits for that kernel's end
  // (programmatic dependent launch on NVIDIA sm_90+; elsewhere the same builds launch as any other).
  // Off until measured; part of every build's key. For a rank with its GPU to itself: where ranks
  // share one GPU (`programs` above), a rank's next kernel starting early may take the SMs another
  // rank's programs wait for, and their bounded waits then give up into the health words.
  bool dependent_launch = false;
  // K1 built with its linear in_proj (k1.h K1Build::linear_in_proj: W_in streams from the launch's
  // start, AttnRes's mix folded in at each task's end) at every width whose build k1_linear_refusal
  // accepts at the model's max_blocks (K3: up to 8 tokens, its 9 sources padding past the
  // accumulator's bound at 16), each layer's build sized for the layer's own block sources
  // (k1_linear_sized: K3 at 4 tokens, four builds of 8 to 64 accumulator columns, not one of 64);
  // the default form at the others. Off until measured in the whole step; part of every build's key.
  bool k1_linear = false;
};

// What construction and the KV binds built.
struct ExecutorStats {
  int layers = 0, whole_layers = 0, ffn_layers = 0;
  std::vector<int> widths;
  // The widths whose K1 runs its linear in_proj (ExecutorOptions::k1_linear): checked against the
  // reference of that form's rounding points (k3_layer_reference.h InProjInput::kLinearSources).
  std::vector<int> k1_linear_widths;
  int builds = 0;    // distinct kernel builds loaded
  int compiled = 0;  // of them, compiled by this process (cache misses)
  int lowered = 0;   // of them, lowered by this process (direct-mode misses; none on a warm cache)
  double seconds = 0;
  // Where construction's time went: the weight checks and their agreement, finding (or lowering and
  // compiling) every build's code object, loading them with their scratch.
  double check_seconds = 0, find_seconds = 0, load_seconds = 0;
};

class SpecializedDecode {
 public:
  // The seed's construction, on every rank of `group` at the same point: agrees on tp_reasons and
  // weight_reasons (any rank refusing makes every rank refuse); with a group of more than one rank
  // (not stood in) makes the group's peer buffer (PeerBuffer::create: a device that cannot map its
  // peers refuses on every rank) for K2's exchanges, its builds exchanging over the group's ranks;
  // builds the rank's launch state on `device` (the
  // scratch of every build, the epoch, the health words and the alarm), a WholeLayer or FfnLayer for
  // every served layer at every width, and compiles every distinct build through `jit` before
  // returning. A failure of any rank past the weights (a build, an allocation, a compile) fails
  // every rank before they return (agree_outcome). The views in `backbone` must outlive the executor.
  static absl::StatusOr<std::unique_ptr<SpecializedDecode>> create(const Backbone& backbone, DecodeConfig config,
                                                                   Group& group, Device& device, jit::Jit& jit,
                                                                   ExecutorOptions options = {});
  ~SpecializedDecode();

  // After each KV-cache bind: forgets the previous binding; with nothing bound returns; else checks
  // every KDA layer's (conv, recurrent) pair (cache_reasons, agreed over the group), records the
  // binding, and compiles here any build the binding needs that construction did not make (another
  // conv state_len), its scratch zeroed on the host's `stream` (the stream its steps run on). Every
  // served KDA layer must be in `caches`, keyed by attention_name(layer). Every rank refuses or
  // fails together: a rank missing a cache, refusing one, unbound beside bound peers, or failing a
  // build makes every rank return an error, and none waits in a collective the others left.
  absl::Status prepare_kv(const std::vector<KdaCache>& caches, Stream& stream);

  // The seed's plan (step_plan.h): nothing, a Step, or FailedPrecondition for a KV cache re-bound
  // without prepare_kv. Compiles nothing, allocates nothing.
  absl::StatusOr<std::optional<Step>> plan(const StepInputs& step) const;

  // Once per executed step on every rank, after its launches were enqueued on `stream`: the
  // fail-stop vote (fail_stop.h). Nothing while the host captures a graph.
  absl::Status after_step(Stream& stream, bool capturing = false);

  // Reads every health record now (synchronous; for tools and tests): OK, or Internal naming each
  // wait that gave up.
  absl::Status check_health() const;
  // The step epoch as the device holds it now (synchronous; for tools and tests, after the
  // stream's work finished): one more for every step the device ran, each replay of a captured
  // step included, since the bump is a launch inside the graph.
  absl::StatusOr<int32_t> device_epoch() const;

  const ExecutorStats& stats() const { return stats_; }
  const DecodeConfig& config() const;
  // The name plan() routes on: the first KDA layer's attention
  // ("language_model.model.layers.1.self_attn").
  const std::string& kda_prefix() const;
  // Decoder layer `layer`'s attention module as the host names it ("<layers_prefix>.<layer>.self_attn",
  // Backbone::layers_prefix or the config's): the key of its attention metadata and its KdaCache.
  std::string attention_name(int layer) const;

 private:
  SpecializedDecode();
  // create's steps past the weight agreement, this rank's own, and prepare_kv's past the planner's.
  static absl::StatusOr<std::unique_ptr<SpecializedDecode>> construct(
      const Backbone& backbone, DecodeConfig config, Group& group, Device& device, jit::Jit& jit,
      ExecutorOptions options, std::chrono::steady_clock::time_point start, double check_seconds,
      std::unique_ptr<PeerBuffer> peers);
  absl::Status bind_kv(const std::vector<KdaCache>& caches, Stream& stream);
  std::unique_ptr<Runner> runner_;
  ExecutorStats stats_;
  std::string layers_prefix_;
};

}  // namespace monotile::runtime::decode
