// One layer step of `monotile layer run` on a device: K1 (a KDA layer's attention half) and then K2
// (o_proj to the MoE output) on the buffers K1 left (its core, the prefix it updated in place, the
// block it wrote), or K2 alone on an FFN layer's core. Every output is poisoned first (a NaN,
// expert -7), so a value a kernel does not write fails the check; a wait that gave up is an error
// naming it. LayerLaunch keeps the layer made (weights on the device, kernels loaded, the step's
// inputs kept beside the buffers the kernels update in place), so that a benchmark launches the
// same step again and again (layer_tp_bench); run_layer runs it once.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dsl/target.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/k2.h"
#include "runtime/device.h"
#include "runtime/k1_launch.h"
#include "runtime/k2_launch.h"
#include "tools/layer_io.h"
#include "tools/layer_weights.h"

namespace monotile::tools {

// One kernel's launch: its name ("K1", "K2"), program instances and wall time to its end.
struct KernelRun {
  std::string kernel;
  int programs = 0;
  double seconds = 0;
};

struct LayerRun {
  LayerOutputs outputs;
  std::string device;  // runtime::describe of the device
  std::vector<KernelRun> kernels;
};

struct LayerLaunchOptions {
  // Program instances of each launch: 0 for every compute unit of a GPU (8 on the CPU device);
  // else this many (K1 at least its rows), e.g. a rank's share of a GPU that ranks share.
  int programs = 0;
  // K2 exchanging across the model's TP group (model.dims.tp ranks, this one model.dims.rank): the
  // group's peer buffers (runtime/decode/peer_buffer.h) in rank order as this device addresses
  // them. Empty: the rank alone, its reductions its own partials (the others stood in by zero).
  std::vector<runtime::DevicePtr> peers;
};

// The builds LayerLaunch::create launches for the model's stage on a device of `target`
// (`interpreted`: the CPU device, its waits bounded by minutes), K2 exchanging across the model's
// TP group when `exchanging`; a layer's kernel it does not run is absent. Refused as k1_build and
// k2_build refuse the shapes.
struct LayerBuilds {
  std::optional<kernels::k3::K1Build> k1;
  std::optional<kernels::k3::K2Build> k2;
};
absl::StatusOr<LayerBuilds> layer_builds(const LayerModel& model, const LayerStep& step,
                                         const LayerShape& shape, const dsl::Target& target,
                                         bool interpreted, bool exchanging);

class LayerLaunch {
 public:
  // Uploads the rank's weights the stage reads and the step's inputs (twice: the buffers the
  // kernels update in place and the copies restore() puts back), poisons every output, and loads
  // the kernels: on a GPU compiled through the JIT and the kernel cache, on the CPU device
  // interpreted (waits bounded by minutes there: the programs are host threads sharing the
  // machine's cores).
  static absl::StatusOr<std::unique_ptr<LayerLaunch>> create(
      const LayerModel& model, const LayerStep& step, const LayerShape& shape,
      runtime::Device& device, const LayerLaunchOptions& options = {});
  ~LayerLaunch();

  // On `stream`: the step's inputs copied back over what the last launch updated in place (the
  // prefix, the blocks, the KDA caches), so that every launch computes the same step.
  absl::Status restore(runtime::Stream& stream);
  // Every output filled with the poison again (synchronous), so that the next launch is checked
  // for writing all of it.
  absl::Status poison();
  // The step epoch of the next launches (synchronous): every launch needs a new one (their flags'
  // tags; at TP > 1 every rank gives the same epoch to the same launch).
  absl::Status set_epoch(int32_t epoch);
  // Enqueue K1 (KDA layers only) and K2 (the whole layer) on `stream`.
  absl::Status launch_k1(runtime::Stream& stream);
  absl::Status launch_k2(runtime::Stream& stream);
  // After the launches finished: OK, or the waits that gave up, named.
  absl::Status check_health() const;
  // After the launches finished: every output of the stage (docs/layer_run.md's tables).
  absl::StatusOr<LayerOutputs> outputs() const;

  bool runs_k1() const { return k1_ != nullptr; }
  bool runs_k2() const { return k2_ != nullptr; }
  int k1_programs() const;
  int k2_programs() const;
  const std::string& device_name() const { return device_name_; }

 private:
  struct Buffers;
  struct K1Part;
  struct K2Part;
  LayerLaunch() = default;

  runtime::Device* device_ = nullptr;
  const LayerStep* step_ = nullptr;
  LayerShape shape_;
  int layer_ = 0;
  std::string device_name_;
  std::unique_ptr<Buffers> buffers_;
  std::unique_ptr<K1Part> k1_;
  std::unique_ptr<K2Part> k2_;
};

// Runs the stage's kernels (model.runs_k1(), model.runs_k2()) once on `device`, every compute unit
// of a GPU, the rank alone: K1, then K2 once K1 finished healthy.
absl::StatusOr<LayerRun> run_layer(const LayerModel& model, const LayerStep& step,
                                   const LayerShape& shape, runtime::Device& device);

}  // namespace monotile::tools
