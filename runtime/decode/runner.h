// The executor's per-rank launch state (the seed's MonoRunner) and its served layers: the shared
// epoch, health words and alarm, one scratch per distinct build, the kernels of every build, the
// buffers a step's launches pass between them, and each served layer's weights and KV binding.
// Internal to SpecializedDecode (specialized_decode.h is the interface).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jit/jit.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/k2.h"
#include "model/config.h"
#include "runtime/decode/cache_reasons.h"
#include "runtime/decode/fail_stop.h"
#include "runtime/decode/peer_buffer.h"
#include "runtime/decode/specialized_decode.h"
#include "runtime/decode/step_plan.h"
#include "runtime/k1_launch.h"
#include "runtime/k2_launch.h"
#include "runtime/launch_state.h"

namespace monotile::runtime::decode {

// A loaded build: its kernel (shared by every build of its name: the layers that differ only in
// their launch values, k1.h) and its launch state (scratch, and those values).
struct K1Entry {
  const Kernel* kernel = nullptr;
  K1Launch launch;
};
struct K2Entry {
  const Kernel* kernel = nullptr;
  K2Launch launch;
};

// One served decoder layer at every width: a WholeLayer (KDA: K1 then K2) or an FfnLayer (MLA:
// the host's attention, then K2). Weights are bound once; the KV binding at every prepare_kv; the
// step's tensors at each launch.
class LayerKernel {
 public:
  int layer = 0;
  model::ServedKind kind = model::ServedKind::kNone;
  bool first = false;      // the step's first served layer: bumps the epoch
  std::string attn_name;   // "<layers_prefix>.<layer>.self_attn": its metadata's key
  K1Tensors k1;            // weights bound (KDA layers); caches after prepare_kv
  K2Tensors k2;            // weights bound
  std::map<int, kernels::k3::K2Build> k2_builds;  // by width
  // K1's builds by (width, conv state_len): construction makes state_len q + 2, prepare_kv the
  // bound one.
  std::map<std::pair<int, int>, kernels::k3::K1Build> k1_builds;
  // The same builds loaded, resolved after each Runner::load so that a launch looks up no name.
  std::map<int, const K2Entry*> k2_entries;
  std::map<std::pair<int, int>, const K1Entry*> k1_entries;
  int state_len = 0;       // the bound conv state_len (0: not bound)

  // Enqueues the layer's launches; see LayerLaunch.
  absl::Status launch(const Runner& runner, const SpecMetadata& meta, int width, LayerIo& io,
                      Stream& stream) const;
};

class Runner {
 public:
  Runner(Device& device, jit::Jit& jit, Group& group, DecodeConfig config, const model::ModelConfig& model,
         model::RankDims dims, ExecutorOptions options);

  // The group's peer buffer, K2's exchanges' (before allocate); none at TP 1 or stood in.
  void set_peer_buffer(std::unique_ptr<PeerBuffer> peers) { peers_ = std::move(peers); }

  // The launch state for `programs` instances at most (with the peer buffer's addresses, for every
  // K2 launch), the epoch bump, the step's buffers (rows up to max_rows, o_proj inputs up to
  // `core_width`), and FailStop.
  absl::Status allocate(int programs, int64_t core_width);

  // Loads every build not loaded yet, one kernel a build name: on a GPU lowered and compiled
  // through compile_all (parallel, cached, progress through options.on_progress), on the CPU device
  // added to the interpreter's catalog; then each build's launch (its scratch, zeroed once: on
  // `stream` when given, else synchronously). Adds to stats (builds: the kernels loaded).
  absl::Status load(const std::vector<kernels::k3::K1Build>& k1s, const std::vector<kernels::k3::K2Build>& k2s,
                    ExecutorStats& stats, Stream* stream = nullptr);

  // Points every served layer's builds at their loaded entries (after each load).
  void resolve();

  Device& device() const { return *device_; }
  const DecodeConfig& config() const { return config_; }
  const model::ModelConfig& model() const { return *model_; }
  const model::RankDims& dims() const { return dims_; }
  const ExecutorOptions& options() const { return options_; }
  Group& group() const { return *group_; }
  LaunchState& state() const { return *state_; }
  FailStop& fail_stop() { return *fail_stop_; }
  const Kernel& step_begin() const { return *step_begin_; }
  DevicePtr core() const { return core_.address(); }
  DevicePtr out(int layer) const { return out_[layer % 2].address(); }
  DevicePtr route_experts() const { return route_experts_.address(); }
  DevicePtr route_weights() const { return route_weights_.address(); }

  std::map<int, LayerKernel> layers;  // the served layers, by index
  std::vector<const LayerKernel*> by_layer;  // every decoder layer: its LayerKernel or nullptr
  std::unique_ptr<StepPlanner> planner;

 private:
  Device* device_;
  jit::Jit* jit_;
  Group* group_;
  DecodeConfig config_;
  const model::ModelConfig* model_;
  model::RankDims dims_;
  ExecutorOptions options_;
  // Destroyed after everything that launches into it (members go in reverse order).
  std::unique_ptr<PeerBuffer> peers_;
  std::shared_ptr<LaunchState> state_;
  std::unique_ptr<FailStop> fail_stop_;
  std::optional<Kernel> step_begin_;
  DeviceBuffer core_, out_[2], route_experts_, route_weights_;
  std::map<std::string, Kernel> kernels_;  // by build name (k1_name, k2_name)
  std::map<std::string, K1Entry> k1_;  // by launch key: the build name and the launch values
  std::map<std::string, K2Entry> k2_;
};

}  // namespace monotile::runtime::decode
