// Which device a command runs on: `--device cpu` (the CPU interpreter), `--device gpu` (a GPU), or,
// when not given, a GPU if there is one and else the CPU. A TP rank takes its node's GPU by its
// local rank (rank_gpu): one GPU a rank where there are enough, ranks sharing them round-robin
// where not.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/device.h"

namespace monotile::tools {

// The GPU a rank takes among the `gpus` of its node (one vendor's, in discovery order), and how
// many of the node's ranks take it.
struct RankGpu {
  int index = 0;
  int sharers = 1;  // the node's ranks on this GPU, this one included
  // ExecutorOptions::programs for a rank on a GPU of `compute_units`: where ranks share the GPU,
  // its share of the compute units (at least 1), so that every sharer's persistent grid is resident
  // at once; with the GPU to itself 0, every compute unit.
  int programs(int compute_units) const;
};

// Local rank r of a node's `local_size` ranks takes GPU r % gpus; the GPU is shared by every local
// rank with the same remainder. Needs 0 <= local_rank < local_size and gpus >= 1 (aborts otherwise:
// the group and discovery give these).
RankGpu rank_gpu(int local_rank, int local_size, int gpus);

// --gpu-index N: GPU N for every rank of the node, as one command line under mpirun gives it to
// all, so that the node's local_size ranks share it. InvalidArgument when the node has no GPU N.
absl::StatusOr<RankGpu> rank_gpu_at(int gpu_index, int local_size, int gpus);

// --gpu-index N's misuse, before any device is looked for: a negative N, or N with --device cpu
// (`device`); the message (what, expected, hint), or nullopt.
std::optional<std::string> gpu_index_misuse(std::optional<int> gpu_index,
                                            const std::optional<std::string>& device);

// The device, and on a GPU which one the rank took and how many GPUs its vendor has here.
struct PickedDevice {
  std::unique_ptr<runtime::Device> device;
  RankGpu gpu;   // on a GPU; {0, 1} on the CPU
  int gpus = 0;  // the GPUs of the picked GPU's vendor (0 on the CPU)
};

// NotFound naming each missing vendor's reason when a GPU is asked for and there is none;
// InvalidArgument for another name. A GPU is taken by rank_gpu(local_rank, local_size, its
// vendor's GPUs), or with `gpu_index` by rank_gpu_at (a GPU then asked for); the CPU device is one
// for all.
absl::StatusOr<PickedDevice> pick_rank_device(const std::optional<std::string>& wanted,
                                              int local_rank, int local_size,
                                              std::optional<int> gpu_index = std::nullopt);

}  // namespace monotile::tools
