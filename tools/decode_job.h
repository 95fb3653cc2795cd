// `monotile decode`'s run (DecodeJob): the executor over a whole model, its KV caches and the
// host's stand-ins, fed S spec-verify steps and one prefill-like step through fixed metadata
// buffers, each step run eagerly or recorded once per width and replayed (--graph), then reported:
// per step plan's decision and a digest of its outputs, per layer a time (against its floor on a
// GPU) and with --check its worst error against the float64 reference. Every random input but the
// weights' is drawn as at TP 1 (each rank's caches sliced from TP 1's), so that TP t's outputs can
// be held to TP 1's.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/reference/k3_layer_reference.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/shard_plan.h"
#include "runtime/decode/decode.h"
#include "runtime/decode/device_weights.h"
#include "runtime/decode/mpi_group.h"
#include "runtime/decode/specialized_decode.h"
#include "runtime/device.h"
#include "tools/decode_graph.h"
#include "tools/decode_host_layers.h"
#include "tools/decode_random_weights.h"
#include "tools/device_choice.h"

namespace monotile::tools {

namespace dec = runtime::decode;
namespace ref = kernels::reference;

// What `monotile decode` was asked for (decode_command.cpp parses it).
struct DecodeJobOptions {
  std::string model = "k3-tiny";
  uint64_t seed = 1;
  std::optional<std::string> device;
  std::optional<std::string> standins;
  int q = 2, requests = 2, steps = 3, max_rows = 16, tp = 1, rank = 0;
  bool check = false, graph = false, alias_weights = false;
  bool dependent_launch = false;  // ExecutorOptions::dependent_launch
  bool k1_linear = false;         // ExecutorOptions::k1_linear
  // One TP rank a process under mpirun: the group is MPI's world, the rank its world rank, and the
  // TP size its size (tp 0: not given; another value must equal it). At TP > 1 the ranks exchange
  // their partial sums: K2's over the peer buffers, the host stand-ins' through the group.
  bool mpi = false;
  // TP 2 as two processes of this machine forked from this one, a socket pair their group: the
  // ranks of --mpi where there is no MPI (run_forked_ranks; decode_command.cpp forks them).
  bool fork = false;
  // --gpu-index: every rank of this machine on this GPU (rank_gpu_at); without it, each rank on GPU
  // (local rank % GPUs) (rank_gpu).
  std::optional<int> gpu_index;
  // Each served step's outputs (the digest's bytes) written to this file, the last step's left;
  // under --mpi or --fork, to "<outputs>.rank<R>".
  std::optional<std::string> outputs;
};

// One layer's row of the table.
struct LayerRow {
  std::string kind;
  bool standin = false;  // a layer the host runs whole
  double seconds = 0;
  int runs = 0;
  double worst_rms = 0;
  bool checked = false, passed = true;
};

// The metadata of the step on the device, as vLLM's GDN builder gives it: fixed buffers that every
// step of the width rewrites (a captured graph holds their addresses).
struct DeviceStep {
  HostStep host;
  runtime::DeviceBuffer indices, accepted, starts, mla_slots, mla_context, prefix, blocks;
  dec::AttnMetadata metadata;
};

// How a step's layers are enqueued (enqueue_layers).
struct EnqueueMode {
  bool check = false;  // --check's host work around each layer
  bool cut = false;    // a graph per layer (per-layer times of a recorded step)
  bool timed = false;  // the rows' times, by the host's clock around each layer (eager steps)
};

// The run: setup (weights, the executor, the caches, the stand-ins), the steps, the report.
class DecodeJob {
 public:
  explicit DecodeJob(DecodeJobOptions o) : o_(std::move(o)), rng_(o_.seed) {}
  // One of --fork's ranks: `ranks` is the two processes' group (run_forked_ranks), this rank its
  // rank.
  DecodeJob(DecodeJobOptions o, dec::Group& ranks)
      : o_(std::move(o)), rng_(o_.seed), group_(&ranks) {}
  absl::Status run();

 private:
  absl::Status setup();
  absl::Status setup_group();
  absl::Status setup_caches(std::vector<dec::KdaCache>& bound);
  absl::Status setup_weights(const runtime::DeviceInfo& info);
  absl::Status allocate_step();
  // New step contents; the last `padded` requests padded as vLLM 0.33.0 pads a FULL graph's replay
  // (slot 0 in every column, one accepted token, spec_query_start_loc's last real end repeated) or,
  // with `minus_one`, with every slot -1 and the starts running on.
  absl::Status write_step(int padded, bool prefill, bool minus_one = false);
  absl::Status run_step(int step);
  absl::Status enqueue_layers(StepRecorder& recorder, const dec::Step& planned, EnqueueMode mode);
  absl::Status read_inputs(int layer, runtime::DevicePtr delta);
  // --check at TP > 1 under --mpi: every rank's weights of `layer`, read from the model once.
  absl::StatusOr<std::span<const ref::RankLayerWeights>> group_weights(int layer);
  absl::Status check_outputs(int layer, bool served, runtime::DevicePtr out);
  absl::StatusOr<std::optional<dec::Step>> plan();
  absl::Status time_layers();
  absl::StatusOr<std::vector<uint8_t>> read_ranges(
      const std::vector<std::pair<runtime::DevicePtr, size_t>>& ranges);
  std::string outputs_path() const;
  absl::StatusOr<std::FILE*> open_outputs() const;  // --outputs' file, emptied
  absl::StatusOr<uint64_t> digest(const std::vector<std::pair<runtime::DevicePtr, size_t>>& ranges);
  absl::Status print_step_digest();
  absl::Status print_cache_digest();
  void print_table();

  DecodeJobOptions o_;
  std::mt19937 rng_;
  model::ModelConfig config_;
  model::RankDims dims_;
  model::RankPlan plan_;
  std::unique_ptr<model::TensorSource> source_;
  std::unique_ptr<runtime::Device> device_;
  RankGpu gpu_;   // which of this machine's GPUs the rank took, and how many ranks share it
  int gpus_ = 0;  // this machine's GPUs of that vendor (0 on the CPU)
  std::unique_ptr<dec::Group> owned_group_;
  dec::Group* group_ = nullptr;  // owned_group_, or the forked ranks' (DecodeJob's constructor)
  bool exchanging_ = false;      // --mpi at TP > 1: the ranks exchange their partial sums
  dec::DeviceWeights weights_;
  std::unique_ptr<AliasedWeights> aliased_;
  const dec::Backbone* backbone_ = nullptr;
  std::unique_ptr<dec::SpecializedDecode> decode_;
  std::unique_ptr<HostLayers> host_;
  std::map<int, DeviceKdaCache> caches_;
  std::vector<int64_t> mla_context_;
  std::map<int, LayerRow> rows_;
  int64_t slots_ = 0;
  int64_t state_len_ = 0;
  int first_kda_ = -1;  // the first served KDA layer: plan's routing source
  bool checks_passed_ = true;
  runtime::Stream stream_;
  DeviceStep step_;
  std::map<int, StepGraph> graphs_;        // --graph: each width's recorded step
  std::map<int, ref::LayerInput> inputs_;  // --check: each layer's inputs, read before it runs
  std::map<int, std::vector<ref::RankLayerWeights>> group_weights_;
  std::map<int, double> layer_ms_;   // --graph: each layer's time from the timing replays
  std::vector<double> step_ms_;      // --graph: the whole step's time, replayed
  std::optional<double> bandwidth_;  // a GPU's copy bandwidth (bytes/s), for the floors
  runtime::DevicePtr step_out_ = 0;  // the last layer's output (the step's final delta)
};

}  // namespace monotile::tools
