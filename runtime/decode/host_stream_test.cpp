// The host's stream and graph on the CPU interpreter (host_stream_test_support.h): the host's own
// stream, wrapped for the executor, captured by the host's begin/end on its own handle.
#include "runtime/decode/host_stream_test_support.h"

namespace monotile::runtime::decode {
namespace {

class CpuHostCapture final : public HostCapture {
 public:
  explicit CpuHostCapture(Device& device) : device_(device), own_(*device.create_stream()) {
    wrapped_ = *device.wrap_stream(own_.native());
  }
  Stream& stream() override { return wrapped_; }
  absl::Status begin() override { return device_.begin_capture(own_); }
  absl::Status end() override {
    absl::StatusOr<Graph> graph = device_.end_capture(own_);
    if (!graph.ok()) return graph.status();
    graph_ = std::move(*graph);
    return absl::OkStatus();
  }
  absl::Status replay() override { return device_.replay(graph_, own_); }
  absl::Status synchronize() override { return device_.synchronize(own_); }

 private:
  Device& device_;
  Stream own_;
  Stream wrapped_;
  Graph graph_;
};

class HostStream : public HostStreamFixture {
 protected:
  std::unique_ptr<Device> make_device() override {
    return make_cpu_device(interpreter_loader(ProgramCatalog::process()));
  }
};

TEST_F(HostStream, TheHostsCapturedStepReplaysAsAnEagerRun) {
  CpuHostCapture host(*device_);
  ASSERT_FALSE(host.stream().owned());
  host_stream_graph(host);
}

}  // namespace
}  // namespace monotile::runtime::decode
