// One step of `monotile layer run` on a device: K1 (a KDA layer's attention half) and then K2
// (o_proj to the MoE output) on the buffers K1 left (its core, the prefix it updated in place, the
// block it wrote), or K2 alone on an FFN layer's core. Every output is poisoned first (a NaN,
// expert -7), so a value a kernel does not write fails the check; a wait that gave up is an error
// naming it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/device.h"
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

// Runs the stage's kernels (model.runs_k1(), model.runs_k2()) on `device`: on a GPU compiled
// through the JIT and the kernel cache, on the CPU device interpreted (waits bounded by minutes
// there: the programs are host threads sharing the machine's cores).
absl::StatusOr<LayerRun> run_layer(const LayerModel& model, const LayerStep& step,
                                   const LayerShape& shape, runtime::Device& device);

}  // namespace monotile::tools
