// The host's stream and graph, as a framework drives them (vLLM through torch): the host owns a
// stream, the executor works on it through Device::wrap_stream, and the host itself begins and
// ends graph capture on it. HostStreamFixture::host_stream_graph binds the KV caches on that stream
// and captures a step there (every served layer of layers 1-3: two KDA layers and an MLA layer,
// whose host half is an async copy on the same stream), replays it with new metadata and a padded
// request, and holds the replay to an eager run of the same inputs, byte for byte. Compiled into
// the test binaries (gtest assertions): the interpreter's (host_stream_test.cpp) and the GPU's
// (executor_host_stream_cuda_test.cpp, which captures with the driver API directly).
#pragma once

#include "runtime/decode/executor_test_support.h"

namespace monotile::runtime::decode {

// The host's side: its stream as the executor sees it, and its own graph calls on that stream.
class HostCapture {
 public:
  virtual ~HostCapture() = default;
  virtual Stream& stream() = 0;  // the host's stream, wrapped (not owned)
  virtual absl::Status begin() = 0;
  virtual absl::Status end() = 0;  // ends the capture and makes the graph ready to replay
  virtual absl::Status replay() = 0;
  virtual absl::Status synchronize() = 0;
};

class HostStreamFixture : public ExecutorFixture {
 protected:
  void host_stream_graph(HostCapture& host) {
    std::mt19937 rng = monotile::testing::case_rng();
    served_ = {1, 4};
    Backbone backbone = weights_.backbone;
    backbone.start_layer = served_.first;
    backbone.end_layer = served_.second;
    std::unique_ptr<Group> group = make_single_process_group();
    absl::StatusOr<std::unique_ptr<SpecializedDecode>> made = SpecializedDecode::create(
        backbone, {.q = kQ, .max_rows = 4}, *group, *device_, jit::Jit::process_default(),
        {.on_progress = nullptr, .log = [](const std::string&) {}});
    ASSERT_TRUE(made.ok()) << made.status();
    SpecializedDecode& decode = **made;
    ASSERT_EQ(config_.served_kind(3), model::ServedKind::kFfn) << "the range holds an MLA layer";
    std::vector<KdaCache> bound = bind_caches(rng);
    std::erase_if(bound, [](const KdaCache& c) {
      return c.layer != "model.layers.1.self_attn" && c.layer != "model.layers.2.self_attn";
    });
    ASSERT_TRUE(decode.prepare_kv(bound, host.stream()).ok());
    ASSERT_TRUE(host.synchronize().ok());

    StepInputs in = make_step(decode, 2);
    fill_step(in, 0, rng);
    // The MLA layer's host half: o_proj's input copied on the host's stream from a fixed buffer.
    const size_t core_bytes =
        static_cast<size_t>(in.width) * dims_.mla_heads * config_.v_head_dim * 2;
    DeviceBuffer core_source = *device_->allocate(core_bytes);
    write(core_source.address(), random_bf16(core_bytes / 2, 1.0, rng));
    const DevicePtr core = in.core.address(), source = core_source.address();
    auto attention = [&, core, source, core_bytes](int, const LayerIo&,
                                                   Stream& on) -> absl::StatusOr<DevicePtr> {
      if (absl::Status s = device_->copy_on_device_async(core, source, core_bytes, on); !s.ok())
        return s;
      return core;
    };
    auto enqueue_step = [&](LayerIo& io) -> absl::Status {
      const TensorView& state = bound.front().recurrent;
      absl::StatusOr<std::optional<Step>> step =
          decode.plan({.width = in.width, .attn_metadata = &in.metadata, .kda_state = &state});
      if (!step.ok()) return step.status();
      if (!step->has_value()) return absl::InternalError("plan refused the step");
      int launched = 0;
      for (int layer = 0; layer < config_.num_hidden_layers; ++layer) {
        std::optional<LayerLaunch> launch = (*step)->layer(layer);
        if (!launch) continue;
        if (absl::Status s = (*launch)(io, host.stream()); !s.ok()) return s;
        ++launched;
      }
      if (launched != 3)
        return absl::InternalError(absl::StrCat(launched, " layers launched, expected 3"));
      return absl::OkStatus();
    };

    LayerIo io = io_of(in);
    io.attention = attention;
    ASSERT_TRUE(host.begin().ok());
    const absl::Status captured = enqueue_step(io);
    ASSERT_TRUE(decode.after_step(host.stream(), /*capturing=*/true).ok());
    const absl::Status ended = host.end();
    ASSERT_TRUE(captured.ok()) << captured;
    ASSERT_TRUE(ended.ok()) << ended;
    const DevicePtr out = io.delta;

    // New metadata, one real request and one padded; the caches as they are now.
    fill_step(in, 1, rng);
    const size_t th = static_cast<size_t>(in.width * config_.hidden_size);
    const StepBytes before = snapshot_step(in);
    write(out, std::vector<uint8_t>(th * 2, 0xff));  // poisoned: the replay must write it
    ASSERT_TRUE(host.replay().ok());
    ASSERT_TRUE(host.synchronize().ok());
    ASSERT_TRUE(decode.check_health().ok()) << decode.check_health();
    StepBytes replayed = snapshot_step(in);
    replayed.push_back(read<uint8_t>(out, th * 2));
    EXPECT_NE(replayed.back(), std::vector<uint8_t>(th * 2, 0xff))
        << "the replay wrote the step's output";

    // The same inputs eagerly, on the same stream.
    restore_step(in, before);
    write(out, std::vector<uint8_t>(th * 2, 0xff));
    io = io_of(in);
    io.attention = attention;
    const absl::Status eager = enqueue_step(io);
    ASSERT_TRUE(eager.ok()) << eager;
    ASSERT_TRUE(decode.after_step(host.stream()).ok());
    ASSERT_TRUE(host.synchronize().ok());
    ASSERT_TRUE(decode.check_health().ok()) << decode.check_health();
    ASSERT_EQ(io.delta, out) << "an eager step writes its output where the captured one did";
    StepBytes eager_bytes = snapshot_step(in);
    eager_bytes.push_back(read<uint8_t>(out, th * 2));
    const char* names[] = {"prefix",       "blocks",        "layer 1 conv", "layer 1 state",
                           "layer 2 conv", "layer 2 state", "out"};
    for (size_t i = 0; i < eager_bytes.size(); ++i) {
      EXPECT_TRUE(eager_bytes[i] == replayed[i])
          << names[i] << " differs between the replay and the eager run";
    }
    EXPECT_NE(eager_bytes[2], before[2]) << "the step wrote layer 1's conv state";
  }
};

}  // namespace monotile::runtime::decode
