// A decode step recorded once per width and replayed (`monotile decode --graph`), as vLLM's CUDA
// graph mode runs a decode step: the step's launches captured on one stream into device graphs
// whose buffers stay put, later steps writing new metadata into those buffers and replaying. The
// capture is cut wherever the host must work between launches (a stand-in that is the float64
// reference on the CPU, --check reading a layer's inputs and outputs): the host's work is kept and
// run again at the same point of every replay, so one width's step is a list of graphs and host
// work, a single graph when the host has nothing to do.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/device.h"

namespace monotile::tools {

using HostWork = std::function<absl::Status()>;

// A recorded step: its parts in order, each a graph or host work, each charged to a decoder layer.
class StepGraph {
 public:
  // Replays every part on `stream` in order (host work after the graphs before it finished). With
  // `layer_ms`, also times each part between events and adds its milliseconds to its layer's entry
  // (waiting for the stream at the end).
  absl::Status replay(runtime::Device& device, runtime::Stream& stream,
                      std::map<int, double>* layer_ms = nullptr) const;

  int graphs() const;
  int host_parts() const { return static_cast<int>(parts_.size()) - graphs(); }

 private:
  friend class StepRecorder;
  struct Part {
    int layer = 0;
    std::optional<runtime::Graph> graph;
    HostWork work;
  };
  std::vector<Part> parts_;
};

// Runs a step's launches and host work either eagerly or while recording a StepGraph. The step's
// code calls launching() before it enqueues device work and host() for work on the host, the same
// code for both.
class StepRecorder {
 public:
  // Nothing recorded: launches run as enqueued, host work at once.
  StepRecorder(runtime::Device& device, runtime::Stream& stream, bool record)
      : device_(&device), stream_(&stream), record_(record) {}

  bool recording() const { return record_; }
  // The decoder layer the following parts are charged to.
  void set_layer(int layer) { layer_ = layer; }
  // Device work follows: recording, a graph begins unless one is open.
  absl::Status launching();
  // Host work at this point of the step. Recording: the open graph ends and runs (the work reads
  // what it wrote), `work` runs and is kept for replays, and with `launches_follow` the next graph
  // begins at once (the work sits inside a launch sequence, as an MLA layer's attention does).
  absl::Status host(HostWork work, bool launches_follow = false);
  // Recording: the open graph ends and runs; the next launching() begins another (a graph per
  // layer, for per-layer times).
  absl::Status cut();
  // Ends the recording (the last graph runs) and gives the step. Not recording: an empty StepGraph.
  absl::StatusOr<StepGraph> finish();

 private:
  absl::Status close();
  runtime::Device* device_;
  runtime::Stream* stream_;
  bool record_;
  bool open_ = false;
  int layer_ = 0;
  StepGraph graph_;
};

}  // namespace monotile::tools
