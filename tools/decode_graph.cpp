// Recording and replaying a decode step; see decode_graph.h.
#include "tools/decode_graph.h"

#include <algorithm>

#include "support/status_macros.h"

namespace monotile::tools {

int StepGraph::graphs() const {
  return static_cast<int>(std::count_if(parts_.begin(), parts_.end(),
                                        [](const Part& p) { return p.graph.has_value(); }));
}

absl::Status StepGraph::replay(runtime::Device& device, runtime::Stream& stream,
                               std::map<int, double>* layer_ms) const {
  // One event before each part and one after the last: a part's time is the stream's time between
  // its two events, with no host wait between graphs.
  std::vector<runtime::Event> events;
  auto mark = [&]() -> absl::Status {
    if (layer_ms == nullptr) return absl::OkStatus();
    MT_ASSIGN_OR_RETURN(runtime::Event event, device.create_event());
    MT_RETURN_IF_ERROR(device.record(event, stream));
    events.push_back(std::move(event));
    return absl::OkStatus();
  };
  for (const Part& part : parts_) {
    MT_RETURN_IF_ERROR(mark());
    if (part.graph) {
      MT_RETURN_IF_ERROR(device.replay(*part.graph, stream));
    } else {
      MT_RETURN_IF_ERROR(device.synchronize(stream));
      MT_RETURN_IF_ERROR(part.work());
    }
  }
  MT_RETURN_IF_ERROR(mark());
  if (layer_ms == nullptr) return absl::OkStatus();
  MT_RETURN_IF_ERROR(device.synchronize(stream));
  for (size_t i = 0; i < parts_.size(); ++i) {
    MT_ASSIGN_OR_RETURN(float ms, device.elapsed_ms(events[i], events[i + 1]));
    (*layer_ms)[parts_[i].layer] += ms;
  }
  return absl::OkStatus();
}

absl::Status StepRecorder::launching() {
  if (!record_ || open_) return absl::OkStatus();
  MT_RETURN_IF_ERROR(device_->begin_capture(*stream_));
  open_ = true;
  return absl::OkStatus();
}

absl::Status StepRecorder::close() {
  if (!open_) return absl::OkStatus();
  open_ = false;
  MT_ASSIGN_OR_RETURN(runtime::Graph graph, device_->end_capture(*stream_));
  // The capture recorded the launches without running them: the step runs them now.
  MT_RETURN_IF_ERROR(device_->replay(graph, *stream_));
  graph_.parts_.push_back({.layer = layer_, .graph = std::move(graph), .work = nullptr});
  return absl::OkStatus();
}

absl::Status StepRecorder::host(HostWork work, bool launches_follow) {
  if (!record_) return work();
  MT_RETURN_IF_ERROR(close());
  MT_RETURN_IF_ERROR(device_->synchronize(*stream_));
  MT_RETURN_IF_ERROR(work());
  graph_.parts_.push_back({.layer = layer_, .graph = std::nullopt, .work = std::move(work)});
  return launches_follow ? launching() : absl::OkStatus();
}

absl::Status StepRecorder::cut() {
  return close();
}

absl::StatusOr<StepGraph> StepRecorder::finish() {
  MT_RETURN_IF_ERROR(close());
  StepGraph done = std::move(graph_);
  graph_ = StepGraph();
  return done;
}

}  // namespace monotile::tools
