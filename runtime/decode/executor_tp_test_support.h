// Executor tests over a group of TP ranks (executor_tp_test on the interpreter,
// executor_tp_gpu_test on a GPU): one rank serving k3-tiny's KDA layers 1 and 2 with its own
// device, weights, executor, caches and a step's buffers. Compiled into the test binaries, not into
// a library.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "model/config.h"
#include "model/dtype.h"
#include "model/seeded_weights.h"
#include "runtime/decode/device_weights.h"
#include "runtime/decode/group.h"
#include "runtime/decode/specialized_decode.h"
#include "support/status_macros.h"
#include "tests/testing/seed.h"

namespace monotile::runtime::decode {

inline constexpr int kQ = 2;
inline constexpr int kRequests = 2;
inline constexpr int kWidth = kQ * kRequests;
inline constexpr int kSlots = 2 * kWidth + 3;

inline std::vector<uint16_t> random_bf16(size_t n, double scale, std::mt19937& rng) {
  std::normal_distribution<double> dist(0.0, scale);
  std::vector<uint16_t> out(n);
  for (uint16_t& v : out) v = model::bf16_from_double(dist(rng));
  return out;
}

// One rank of a group serving k3-tiny's KDA layers 1 and 2 (K1 then K2 each, no host half): its
// device, weights, executor, caches and a step's buffers, the same step contents on every rank.
class KdaRank {
 public:
  // On `device` (the rank's own), with `options` for its executor.
  static absl::StatusOr<std::unique_ptr<KdaRank>> create(Group& group,
                                                         const model::ModelConfig& config,
                                                         ExecutorOptions options,
                                                         std::unique_ptr<Device> device_made) {
    std::unique_ptr<KdaRank> r(new KdaRank(config));
    const int tp = group.size(), rank = group.rank();
    MT_ASSIGN_OR_RETURN(r->dims_, model::rank_dims(config, tp, rank));
    r->device_ = std::move(device_made);
    Device& device = *r->device_;
    MT_ASSIGN_OR_RETURN(std::unique_ptr<model::SeededWeights> source,
                        model::SeededWeights::create(config, 5));
    MT_ASSIGN_OR_RETURN(r->weights_, upload_rank_weights(device, config, tp, rank, 0,
                                                         config.num_hidden_layers, *source));
    r->weights_.backbone.layers_prefix = "model.layers";
    r->weights_.backbone.start_layer = 1;
    r->weights_.backbone.end_layer = 3;
    options.on_progress = nullptr;
    options.log = [](const std::string&) {};
    MT_ASSIGN_OR_RETURN(
        r->decode_, SpecializedDecode::create(r->weights_.backbone, {.q = kQ, .max_rows = 4}, group,
                                              device, jit::Jit::process_default(), options));
    std::mt19937 rng = monotile::testing::named_rng(absl::StrCat("kda rank ", tp, " ", rank));
    const int64_t channels = 3 * r->dims_.kda_projection;
    r->conv_bytes_ = static_cast<size_t>(kSlots * (kQ + 2) * channels) * 2;
    r->state_bytes_ = static_cast<size_t>(int64_t{kSlots} * r->dims_.kda_heads * 128 * 128) * 4;
    std::vector<KdaCache> views;
    for (int layer : {1, 2}) {
      MT_ASSIGN_OR_RETURN(DeviceBuffer conv, device.allocate(r->conv_bytes_));
      MT_ASSIGN_OR_RETURN(DeviceBuffer state, device.allocate(r->state_bytes_));
      MT_RETURN_IF_ERROR(r->write(conv.address(), random_bf16(r->conv_bytes_ / 2, 1.0, rng)));
      MT_RETURN_IF_ERROR(r->write(state.address(), std::vector<float>(r->state_bytes_ / 4, 0.01f)));
      views.push_back(
          {absl::StrCat("model.layers.", layer, ".self_attn"),
           TensorView::dense(model::Dtype::kBF16, {kSlots, kQ + 2, channels}, conv.address()),
           TensorView::dense(model::Dtype::kF32, {kSlots, r->dims_.kda_heads, 128, 128},
                             state.address())});
      r->caches_.push_back(std::move(conv));
      r->caches_.push_back(std::move(state));
    }
    r->first_state_ = views.front().recurrent;
    MT_ASSIGN_OR_RETURN(r->stream_, device.create_stream());
    MT_RETURN_IF_ERROR(r->decode_->prepare_kv(views, r->stream_));
    const size_t th = static_cast<size_t>(kWidth * config.hidden_size);
    MT_ASSIGN_OR_RETURN(r->indices_, device.allocate(kWidth * 4));
    MT_ASSIGN_OR_RETURN(r->accepted_, device.allocate(kRequests * 4));
    MT_ASSIGN_OR_RETURN(r->starts_, device.allocate((kRequests + 1) * 4));
    MT_ASSIGN_OR_RETURN(r->prefix_, device.allocate(th * 2));
    MT_ASSIGN_OR_RETURN(r->blocks_,
                        device.allocate(th * static_cast<size_t>(config.block_count()) * 2));
    MT_ASSIGN_OR_RETURN(r->delta_, device.allocate(th * 2));
    SpecMetadata m{.spec_sequence_masks = true,
                   .num_spec_decodes = kRequests,
                   .uniform_spec_sequence_length = kQ,
                   .spec_state_indices = TensorView::dense(model::Dtype::kI32, {kRequests, kQ},
                                                           r->indices_.address()),
                   .num_accepted_tokens =
                       TensorView::dense(model::Dtype::kI32, {kRequests}, r->accepted_.address()),
                   .spec_query_start_loc = TensorView::dense(model::Dtype::kI32, {kRequests + 1},
                                                             r->starts_.address())};
    r->metadata_ = {{r->decode_->kda_prefix(), m}};
    return r;
  }

  // New step contents, the same on every rank for the same `step_rng`: slots 1.., one or two
  // accepted tokens, random prefix, blocks and delta.
  absl::Status fill(std::mt19937& step_rng) {
    std::vector<int32_t> indices(kWidth), accepted(kRequests), starts(kRequests + 1);
    for (int i = 0; i < kWidth; ++i) indices[static_cast<size_t>(i)] = 1 + i;
    for (int n = 0; n < kRequests; ++n) {
      accepted[static_cast<size_t>(n)] = std::uniform_int_distribution<int>(1, kQ)(step_rng);
      starts[static_cast<size_t>(n + 1)] = (n + 1) * kQ;
    }
    const size_t th = static_cast<size_t>(kWidth * config_->hidden_size);
    MT_RETURN_IF_ERROR(write(indices_.address(), indices));
    MT_RETURN_IF_ERROR(write(accepted_.address(), accepted));
    MT_RETURN_IF_ERROR(write(starts_.address(), starts));
    MT_RETURN_IF_ERROR(write(prefix_.address(), random_bf16(th, 1.0, step_rng)));
    MT_RETURN_IF_ERROR(
        write(blocks_.address(),
              random_bf16(th * static_cast<size_t>(config_->block_count()), 1.0, step_rng)));
    return write(delta_.address(), random_bf16(th, 0.5, step_rng));
  }

  // Enqueues layers 1 and 2 of a planned step on the rank's stream; returns the MoE output's
  // buffer.
  absl::StatusOr<DevicePtr> enqueue() {
    MT_ASSIGN_OR_RETURN(
        std::optional<Step> step,
        decode_->plan({.width = kWidth, .attn_metadata = &metadata_, .kda_state = &first_state_}));
    if (!step) return absl::InternalError("plan refused a pure spec-verify step");
    LayerIo io{.prefix = prefix_.address(),
               .blocks = blocks_.address(),
               .blocks_token_stride = config_->block_count() * config_->hidden_size,
               .blocks_block_stride = config_->hidden_size,
               .delta = delta_.address(),
               .attention = nullptr};
    for (int layer : {1, 2}) MT_RETURN_IF_ERROR((*step->layer(layer))(io, stream_));
    return io.delta;
  }

  // Every byte a step reads or writes (prefix, blocks, delta, caches), to restore between runs.
  absl::StatusOr<std::vector<std::vector<uint8_t>>> snapshot() {
    std::vector<std::vector<uint8_t>> out;
    for (const DeviceBuffer* b : buffers()) {
      std::vector<uint8_t> bytes(b->size());
      MT_RETURN_IF_ERROR(device_->copy_to_host(bytes.data(), b->address(), bytes.size()));
      out.push_back(std::move(bytes));
    }
    return out;
  }
  absl::Status restore(const std::vector<std::vector<uint8_t>>& saved) {
    std::vector<const DeviceBuffer*> all = buffers();
    for (size_t i = 0; i < all.size(); ++i) MT_RETURN_IF_ERROR(write(all[i]->address(), saved[i]));
    return absl::OkStatus();
  }
  // What the step left: the MoE output at `out`, the prefix and the blocks, as bytes.
  absl::StatusOr<std::string> outputs(DevicePtr out) {
    const size_t th = static_cast<size_t>(kWidth * config_->hidden_size) * 2;
    std::string bytes(th * (2 + static_cast<size_t>(config_->block_count())), '\0');
    MT_RETURN_IF_ERROR(device_->copy_to_host(bytes.data(), out, th));
    MT_RETURN_IF_ERROR(device_->copy_to_host(bytes.data() + th, prefix_.address(), th));
    MT_RETURN_IF_ERROR(
        device_->copy_to_host(bytes.data() + 2 * th, blocks_.address(), bytes.size() - 2 * th));
    return bytes;
  }

  Device& device() { return *device_; }
  Stream& stream() { return stream_; }
  SpecializedDecode& decode() { return *decode_; }

 private:
  explicit KdaRank(const model::ModelConfig& config) : config_(&config) {}
  template <typename V>
  absl::Status write(DevicePtr at, const V& v) {
    return device_->copy_to_device(at, v.data(), v.size() * sizeof(v[0]));
  }
  std::vector<const DeviceBuffer*> buffers() const {
    std::vector<const DeviceBuffer*> all = {&prefix_, &blocks_, &delta_};
    for (const DeviceBuffer& c : caches_) all.push_back(&c);
    return all;
  }

  const model::ModelConfig* config_;
  model::RankDims dims_;
  std::unique_ptr<Device> device_;
  DeviceWeights weights_;
  std::unique_ptr<SpecializedDecode> decode_;
  std::vector<DeviceBuffer> caches_;
  size_t conv_bytes_ = 0, state_bytes_ = 0;
  TensorView first_state_;
  Stream stream_;
  DeviceBuffer indices_, accepted_, starts_, prefix_, blocks_, delta_;
  AttnMetadata metadata_;
};

// What one rank saw of two eager steps with different inputs (A, then B), then one capture of the
// step replayed on A's inputs and on B's (the caches as each eager step found them): the outputs
// and the device's epoch after each. The eager steps run at epochs e + 1 and e + 2, the capture
// runs nothing, the replays run at e + 3 and e + 4 (both parity halves), and each replay writes
// bit for bit what the eager step on its inputs wrote, only if the epoch bump is a launch inside
// the graph: with the bump outside, a replay would run at the last eager step's epoch and take the
// other ranks' flags of that step as its own.
struct GraphSteps {
  std::vector<std::string> eager, replayed;  // A, B
  std::vector<int32_t> epochs;  // before, after eager A, eager B, the capture, replay A, replay B
};

inline absl::StatusOr<GraphSteps> run_graph_steps(KdaRank& r, const std::string& seed) {
  GraphSteps out;
  std::mt19937 rng = monotile::testing::named_rng(seed);
  std::vector<std::mt19937> inputs;  // each step's generator, as it was before fill
  std::vector<std::vector<std::vector<uint8_t>>> saved;
  auto epoch = [&]() -> absl::Status {
    MT_ASSIGN_OR_RETURN(const int32_t e, r.decode().device_epoch());
    out.epochs.push_back(e);
    return absl::OkStatus();
  };
  MT_RETURN_IF_ERROR(epoch());
  for (int step = 0; step < 2; ++step) {
    inputs.push_back(rng);
    MT_RETURN_IF_ERROR(r.fill(rng));
    MT_ASSIGN_OR_RETURN(std::vector<std::vector<uint8_t>> state, r.snapshot());
    saved.push_back(std::move(state));
    MT_ASSIGN_OR_RETURN(DevicePtr at, r.enqueue());
    MT_RETURN_IF_ERROR(r.device().synchronize(r.stream()));
    MT_RETURN_IF_ERROR(r.decode().check_health());
    MT_ASSIGN_OR_RETURN(std::string bytes, r.outputs(at));
    out.eager.push_back(std::move(bytes));
    MT_RETURN_IF_ERROR(epoch());
  }
  MT_RETURN_IF_ERROR(r.device().begin_capture(r.stream()));
  absl::StatusOr<DevicePtr> captured_out = r.enqueue();
  MT_ASSIGN_OR_RETURN(Graph graph, r.device().end_capture(r.stream()));
  MT_RETURN_IF_ERROR(captured_out.status());
  MT_RETURN_IF_ERROR(epoch());
  for (int step = 0; step < 2; ++step) {
    std::mt19937 again = inputs[static_cast<size_t>(step)];
    MT_RETURN_IF_ERROR(r.fill(again));  // the step's metadata
    MT_RETURN_IF_ERROR(r.restore(saved[static_cast<size_t>(step)]));
    MT_RETURN_IF_ERROR(r.device().replay(graph, r.stream()));
    MT_RETURN_IF_ERROR(r.device().synchronize(r.stream()));
    MT_RETURN_IF_ERROR(r.decode().check_health());
    MT_ASSIGN_OR_RETURN(std::string bytes, r.outputs(*captured_out));
    out.replayed.push_back(std::move(bytes));
    MT_RETURN_IF_ERROR(epoch());
  }
  return out;
}

// run_graph_steps' verdict on one rank: "" when every rule above holds, else what broke.
inline std::string graph_steps_verdict(const GraphSteps& g) {
  const int32_t e = g.epochs.empty() ? 0 : g.epochs[0];
  const std::vector<int32_t> want = {e, e + 1, e + 2, e + 2, e + 3, e + 4};
  if (g.epochs != want) {
    std::string seen, expected;
    for (int32_t v : g.epochs) absl::StrAppend(&seen, seen.empty() ? "" : " ", v);
    for (int32_t v : want) absl::StrAppend(&expected, expected.empty() ? "" : " ", v);
    return absl::StrCat("device epochs ", seen,
                        " (before, eager A, eager B, capture, replay A, replay B), expected ",
                        expected,
                        ": the epoch bump is not one launch of each step inside the graph");
  }
  if (g.eager.size() != 2 || g.replayed.size() != 2) return "missing outputs";
  if (g.eager[0] == g.eager[1])
    return "steps A and B wrote the same bytes: their inputs do not differ";
  for (int step = 0; step < 2; ++step) {
    if (g.replayed[static_cast<size_t>(step)] != g.eager[static_cast<size_t>(step)]) {
      return absl::StrCat("the replay on step ", step == 0 ? "A" : "B",
                          "'s inputs differs from the eager step ", step == 0 ? "A" : "B");
    }
  }
  return "";
}

}  // namespace monotile::runtime::decode
