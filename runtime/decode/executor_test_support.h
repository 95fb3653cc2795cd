// The executor's test fixture, on the CPU interpreter (executor_test) or a GPU (executor_gpu_test):
// k3-tiny at TP 1 from seeded weights, KDA caches, steps with fixed device buffers, and each served
// layer checked against the float64 reference of that layer on the inputs it had (layer_check.h).
// Compiled into the test binaries (gtest assertions), not into a library.
#pragma once

#include "runtime/decode/specialized_decode.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernels/reference/k3_layer_reference.h"
#include "model/dtype.h"
#include "model/seeded_weights.h"
#include "model/shard_plan.h"
#include "runtime/decode/device_weights.h"
#include "runtime/decode/in_process_group.h"
#include "runtime/decode/layer_check.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"
#include "tests/testing/seed.h"

namespace monotile::runtime::decode {

using Vec = std::vector<double>;
namespace ref = kernels::reference;

inline Vec bf16_values(const std::vector<uint16_t>& bits) {
  Vec out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = model::bf16_to_float(bits[i]);
  return out;
}

inline std::vector<uint16_t> random_bf16(size_t n, double scale, std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<uint16_t> out(n);
  for (uint16_t& v : out) v = model::bf16_from_double(normal(rng));
  return out;
}

inline void expect_passes(const kernels::k3::OutputCheck& check, int layer) {
  EXPECT_TRUE(check.passed()) << "layer " << layer << " " << check.name << ": " << check.failures
                              << " failures of " << check.compared << ", worst " << check.worst_ulps
                              << " ulps; first: " << check.first_failure;
}

class ExecutorFixture : public ::testing::Test {
 protected:
  static constexpr int kQ = 2;
  static constexpr int kSlots = 2 * kQ * 2 + 3;

  void SetUp() override {
    config_ = *model::load_config("k3-tiny");
    dims_ = *model::rank_dims(config_, 1, 0);
    device_ = make_device();
    if (!device_) GTEST_SKIP() << skip_reason_;
    absl::StatusOr<std::unique_ptr<model::SeededWeights>> seeded = model::SeededWeights::create(config_, 5);
    ASSERT_TRUE(seeded.ok()) << seeded.status();
    source_ = std::move(*seeded);
    absl::StatusOr<DeviceWeights> weights =
        upload_rank_weights(*device_, config_, 1, 0, 0, config_.num_hidden_layers, *source_);
    ASSERT_TRUE(weights.ok()) << weights.status();
    weights_ = std::move(*weights);
    // The cases key caches and metadata as vLLM names a text-only model's layers; layer_names_test
    // covers the config's names (the published checkpoint's "language_model.model.layers").
    weights_.backbone.layers_prefix = "model.layers";
    plan_ = *model::plan_rank(config_, 1, 0);
  }

  template <typename T>
  std::vector<T> read(DevicePtr address, size_t n) const {
    std::vector<T> out(n);
    absl::Status s = device_->copy_to_host(out.data(), address, n * sizeof(T));
    EXPECT_TRUE(s.ok()) << s;
    return out;
  }
  template <typename T>
  void write(DevicePtr address, const std::vector<T>& values) const {
    absl::Status s = device_->copy_to_device(address, values.data(), values.size() * sizeof(T));
    EXPECT_TRUE(s.ok()) << s;
  }

  // One KDA layer's caches: conv channels last [slots, q + 2, 3 Pl] bf16, recurrent f32.
  struct Cache {
    DeviceBuffer conv, state;
    int64_t conv_elements = 0, state_elements = 0;
  };

  std::vector<KdaCache> bind_caches(std::mt19937& rng) {
    const int64_t channels = 3 * dims_.kda_projection, state_len = kQ + 2;
    std::vector<KdaCache> views;
    for (int layer = 0; layer < config_.num_hidden_layers; ++layer) {
      if (config_.served_kind(layer) != model::ServedKind::kWhole) continue;
      Cache& c = caches_[layer];
      c.conv_elements = kSlots * state_len * channels;
      c.state_elements = int64_t{kSlots} * dims_.kda_heads * 128 * 128;
      c.conv = *device_->allocate(static_cast<size_t>(c.conv_elements) * 2);
      c.state = *device_->allocate(static_cast<size_t>(c.state_elements) * 4);
      write(c.conv.address(), random_bf16(static_cast<size_t>(c.conv_elements), 1.0, rng));
      std::normal_distribution<float> small(0.0f, 0.1f);
      std::vector<float> state(static_cast<size_t>(c.state_elements));
      for (float& v : state) v = small(rng);
      write(c.state.address(), state);
      views.push_back({absl::StrCat("model.layers.", layer, ".self_attn"),
                       TensorView::dense(model::Dtype::kBF16, {kSlots, state_len, channels}, c.conv.address()),
                       TensorView::dense(model::Dtype::kF32, {kSlots, dims_.kda_heads, 128, 128}, c.state.address())});
    }
    return views;
  }

  ref::KdaCache reference_cache(int layer) const {
    const Cache& c = caches_.at(layer);
    ref::KdaCache out;
    out.slots = kSlots;
    out.state_len = kQ + 2;
    out.conv = bf16_values(read<uint16_t>(c.conv.address(), static_cast<size_t>(c.conv_elements)));
    std::vector<float> state = read<float>(c.state.address(), static_cast<size_t>(c.state_elements));
    out.state.assign(state.begin(), state.end());
    return out;
  }

  ref::RankLayerWeights reference_weights(int layer) const {
    return *ref::load_rank_layer(plan_.layers[static_cast<size_t>(layer)], dims_, *source_);
  }

  // A step's inputs in device buffers that stay put (a captured graph holds their addresses).
  struct StepInputs {
    int requests = 0, width = 0;
    std::vector<int32_t> indices, accepted;
    DeviceBuffer meta_indices, meta_accepted, meta_starts, prefix, blocks, first_delta, core;
    AttnMetadata metadata;
  };

  StepInputs make_step(const SpecializedDecode& decode, int requests) {
    StepInputs in;
    in.requests = requests;
    in.width = requests * kQ;
    const size_t th = static_cast<size_t>(in.width * config_.hidden_size);
    in.meta_indices = *device_->allocate(static_cast<size_t>(in.width) * 4);
    in.meta_accepted = *device_->allocate(static_cast<size_t>(requests) * 4);
    in.meta_starts = *device_->allocate(static_cast<size_t>(requests + 1) * 4);
    in.prefix = *device_->allocate(th * 2);
    in.blocks = *device_->allocate(th * static_cast<size_t>(config_.block_count()) * 2);
    in.first_delta = *device_->allocate(th * 2);
    in.core = *device_->allocate(static_cast<size_t>(in.width) * dims_.mla_heads * config_.v_head_dim * 2);
    SpecMetadata m{.spec_sequence_masks = true,
                   .num_spec_decodes = requests,
                   .uniform_spec_sequence_length = kQ,
                   .spec_state_indices = TensorView::dense(model::Dtype::kI32, {requests, kQ}, in.meta_indices.address()),
                   .num_accepted_tokens = TensorView::dense(model::Dtype::kI32, {requests}, in.meta_accepted.address()),
                   .spec_query_start_loc = TensorView::dense(model::Dtype::kI32, {requests + 1}, in.meta_starts.address())};
    in.metadata = {{decode.kda_prefix(), m}};
    return in;
  }

  // What a step reads and writes besides its output: the prefix and block sums, and the conv and
  // recurrent states of the whole KDA layers 1 and 2. A graph test snapshots them before a replay,
  // restores them, runs the same inputs eagerly, and compares the two snapshots.
  using StepBytes = std::vector<std::vector<uint8_t>>;
  StepBytes snapshot_step(const StepInputs& in) const {
    const size_t th = static_cast<size_t>(in.width * config_.hidden_size);
    StepBytes bytes;
    bytes.push_back(read<uint8_t>(in.prefix.address(), th * 2));
    bytes.push_back(read<uint8_t>(in.blocks.address(), th * static_cast<size_t>(config_.block_count()) * 2));
    for (int layer : {1, 2}) {
      const Cache& c = caches_.at(layer);
      bytes.push_back(read<uint8_t>(c.conv.address(), static_cast<size_t>(c.conv_elements) * 2));
      bytes.push_back(read<uint8_t>(c.state.address(), static_cast<size_t>(c.state_elements) * 4));
    }
    return bytes;
  }
  void restore_step(const StepInputs& in, const StepBytes& bytes) const {
    write(in.prefix.address(), bytes[0]);
    write(in.blocks.address(), bytes[1]);
    size_t i = 2;
    for (int layer : {1, 2}) {
      write(caches_.at(layer).conv.address(), bytes[i++]);
      write(caches_.at(layer).state.address(), bytes[i++]);
    }
  }

  // How a padded request is written: as vLLM 0.33.0 stages a FULL graph's replay for fewer
  // requests (gdn_attn.py: NULL_BLOCK_ID 0 in every column of spec_state_indices, one accepted
  // token, and spec_query_start_loc's entries past the real requests the last real end repeated:
  // [0, q, 2q, 2q] for 2 real requests of 3), or every slot -1 with the starts running on.
  enum class Pad { kVllm, kMinusOne };

  // New contents for the step's buffers: each live position its own slot (never slot 0, vLLM's
  // null slot), the last `padded` requests padded as `pad` says, fresh prefix, blocks and delta.
  void fill_step(StepInputs& in, int padded, std::mt19937& rng, Pad pad_with = Pad::kVllm) {
    std::vector<int> slots;
    for (int s = 1; s < kSlots; ++s) slots.push_back(s);
    std::shuffle(slots.begin(), slots.end(), rng);
    in.indices.assign(static_cast<size_t>(in.width), 0);
    in.accepted.assign(static_cast<size_t>(in.requests), 0);
    std::vector<int32_t> starts(static_cast<size_t>(in.requests + 1));
    const int real = in.requests - padded;
    const int32_t null_slot = pad_with == Pad::kVllm ? 0 : -1;
    for (int n = 0; n < in.requests; ++n) {
      const bool pad = n >= real;
      for (int j = 0; j < kQ; ++j) in.indices[n * kQ + j] = pad ? null_slot : slots[static_cast<size_t>(n * kQ + j)];
      in.accepted[n] = pad ? 1 : std::uniform_int_distribution<int>(1, kQ)(rng);
      starts[n + 1] = (pad_with == Pad::kVllm ? std::min(n + 1, real) : n + 1) * kQ;
    }
    write(in.meta_indices.address(), in.indices);
    write(in.meta_accepted.address(), in.accepted);
    write(in.meta_starts.address(), starts);
    const size_t th = static_cast<size_t>(in.width * config_.hidden_size);
    write(in.prefix.address(), random_bf16(th, 1.0, rng));
    write(in.blocks.address(), random_bf16(th * static_cast<size_t>(config_.block_count()), 1.0, rng));
    write(in.first_delta.address(), random_bf16(th, 0.5, rng));
  }

  std::optional<Step> plan(SpecializedDecode& decode, StepInputs& in) {
    const TensorView first_state = TensorView::dense(model::Dtype::kF32, {kSlots, dims_.kda_heads, 128, 128},
                                                     caches_.begin()->second.state.address());
    absl::StatusOr<std::optional<Step>> step =
        decode.plan({.width = in.width, .attn_metadata = &in.metadata, .kda_state = &first_state});
    EXPECT_TRUE(step.ok()) << step.status();
    EXPECT_TRUE(step.ok() && step->has_value()) << "plan refused a pure spec-verify step of width " << in.width;
    return step.ok() ? *step : std::nullopt;
  }

  LayerIo io_of(StepInputs& in) const {
    const int64_t h = config_.hidden_size;
    return {.prefix = in.prefix.address(), .blocks = in.blocks.address(),
            .blocks_token_stride = config_.block_count() * h, .blocks_block_stride = h,
            .delta = in.first_delta.address(), .attention = nullptr};
  }

  // One step of `requests` requests (the last padded when there are several) over every served
  // layer, each checked against the reference.
  void run_step(SpecializedDecode& decode, int requests, std::mt19937& rng) {
    StepInputs in = make_step(decode, requests);
    fill_step(in, requests > 1 ? 1 : 0, rng);
    run_layers(decode, in, rng);
  }

  // The launches of every served layer of `in`'s step, eagerly, each checked against the
  // reference; returns the last layer's output (the delta).
  DevicePtr run_layers(SpecializedDecode& decode, StepInputs& in, std::mt19937& rng) {
    const int width = in.width, requests = in.requests;
    const int64_t h = config_.hidden_size, blocks = config_.block_count();
    const std::vector<int32_t>& indices = in.indices;
    const std::vector<int32_t>& accepted = in.accepted;
    std::optional<Step> step = plan(decode, in);
    if (!step) return 0;
    EXPECT_FALSE(step->layer(0).has_value()) << "layer 0 (dense MLP) is the host's";
    LayerIo io = io_of(in);
    DeviceBuffer& core = in.core;
    Stream stream = *device_->create_stream();
    const size_t th = static_cast<size_t>(width * h);
    const int64_t mla_core = int64_t{dims_.mla_heads} * config_.v_head_dim;

    int checked_layers = 0;
    for (int layer = 1; layer < config_.num_hidden_layers; ++layer) {
      std::optional<LayerLaunch> launch = step->layer(layer);
      const bool in_range = layer >= served_.first && layer < served_.second;
      EXPECT_EQ(launch.has_value(), in_range && config_.served_kind(layer) != model::ServedKind::kNone)
          << "layer " << layer;
      if (!launch) continue;
      const bool kda = config_.is_kda_layer(layer);
      ref::RankLayerWeights w = reference_weights(layer);
      ref::LayerInput in;
      in.prefix = bf16_values(read<uint16_t>(io.prefix, th));
      in.delta = bf16_values(read<uint16_t>(io.delta, th));
      in.blocks = bf16_values(read<uint16_t>(io.blocks, static_cast<size_t>(width * blocks * h)));
      in.meta = {requests, kQ, indices, accepted};
      if (kda) in.caches.push_back(reference_cache(layer));
      io.attention = nullptr;
      if (!kda) {
        // The host's half of an MLA layer, as a test stand-in: the delta folded into the prefix,
        // and a random o_proj input whose o_proj the reference applies.
        std::vector<uint16_t> core_bits = random_bf16(static_cast<size_t>(width * mla_core), 1.0, rng);
        write(core.address(), core_bits);
        Vec core_values = bf16_values(core_bits);
        in.attention_output.resize(th);
        for (int t = 0; t < width; ++t) {
          Vec a = ref::matvec(w.at("self_attn.o_proj.weight"), std::span(core_values).subspan(t * mla_core, mla_core), h,
                              mla_core);
          for (int64_t i = 0; i < h; ++i) in.attention_output[t * h + i] = model::round_to_bf16(a[i]);
        }
        io.attention = [&, th](int, const LayerIo& at, Stream& on) -> absl::StatusOr<DevicePtr> {
          if (absl::Status s = device_->synchronize(on); !s.ok()) return s;
          std::vector<uint16_t> p = read<uint16_t>(at.prefix, th), d = read<uint16_t>(at.delta, th);
          for (size_t i = 0; i < th; ++i) {
            p[i] = model::bf16_from_double(double(model::bf16_to_float(p[i])) + model::bf16_to_float(d[i]));
          }
          write(at.prefix, p);
          return core.address();
        };
      }
      const DevicePtr delta_in = io.delta;
      absl::Status launched = (*launch)(io, stream);
      EXPECT_TRUE(launched.ok()) << "layer " << layer << ": " << launched;
      EXPECT_TRUE(device_->synchronize(stream).ok());
      EXPECT_TRUE(decode.check_health().ok()) << decode.check_health();
      if (!launched.ok() || !decode.check_health().ok()) return 0;
      EXPECT_NE(io.delta, delta_in) << "the launch returns its MoE output as the next delta";

      LayerResult result;
      result.prefix = bf16_values(read<uint16_t>(io.prefix, th));
      result.blocks = bf16_values(read<uint16_t>(io.blocks, static_cast<size_t>(width * blocks * h)));
      result.out = bf16_values(read<uint16_t>(io.delta, th));
      if (kda) result.cache = reference_cache(layer);
      absl::StatusOr<LayerCheck> check = check_layer(config_, layer, w, in, result);
      EXPECT_TRUE(check.ok()) << check.status();
      if (!check.ok()) return 0;
      for (const kernels::k3::OutputCheck& output : check->outputs) expect_passes(output, layer);
      EXPECT_GE(check->clear_rows * 2, check->rows) << "layer " << layer << ": most rows have a clear top-k";
      ++checked_layers;
    }
    int served = 0;
    for (int layer = served_.first; layer < served_.second; ++layer) {
      served += config_.served_kind(layer) != model::ServedKind::kNone;
    }
    EXPECT_EQ(checked_layers, served);
    return io.delta;
  }


  // The device the fixture runs on; nullptr (with skip_reason_ set) skips the test.
  virtual std::unique_ptr<Device> make_device() = 0;

  // Every served layer of k3-tiny over three steps: the same width twice (one scratch reused with
  // nothing zeroed, the epoch telling the steps apart), then another width. `dependent_launch`:
  // ExecutorOptions::dependent_launch.
  void three_steps(bool dependent_launch = false) {
  std::mt19937 rng = monotile::testing::case_rng();
  std::unique_ptr<Group> group = make_single_process_group();
  std::vector<std::string> lines;
  absl::StatusOr<std::unique_ptr<SpecializedDecode>> decode =
      SpecializedDecode::create(weights_.backbone, {.q = kQ, .max_rows = 4}, *group, *device_,
                                jit::Jit::process_default(),
                                {.on_progress = nullptr,
                                 .log = [&](const std::string& l) { lines.push_back(l); },
                                 .dependent_launch = dependent_launch});
  ASSERT_TRUE(decode.ok()) << decode.status();
  const ExecutorStats& stats = (*decode)->stats();
  EXPECT_EQ(stats.layers, 12);
  EXPECT_EQ(stats.whole_layers, 9);
  EXPECT_EQ(stats.ffn_layers, 3);
  EXPECT_EQ(stats.widths, (std::vector<int>{2, 4}));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("12 layers (9 KDA, 3 MLA FFN) at widths 2,4"), std::string::npos) << lines[0];
  EXPECT_EQ((*decode)->kda_prefix(), "model.layers.1.self_attn");

  Stream kv_stream = *device_->create_stream();
  ASSERT_TRUE((*decode)->prepare_kv(bind_caches(rng), kv_stream).ok());
  // The same width twice (one scratch reused with nothing zeroed, the epoch telling the steps
  // apart), then another width.
  run_step(**decode, 2, rng);
  if (HasFatalFailure()) return;
  run_step(**decode, 2, rng);
  if (HasFatalFailure()) return;
  run_step(**decode, 1, rng);
}

  // A whole step of two KDA layers captured once, then replayed with new metadata contents and
  // fewer real requests (the rest padded as vLLM pads, then with -1): the replay writes exactly
  // what an eager run of the same inputs writes, and that eager run matches the reference layer by
  // layer (replay_padded). `dependent_launch`: ExecutorOptions::dependent_launch (on a GPU the
  // capture then holds programmatic edges between the layers' kernels).
  void graph_replay(bool dependent_launch = false) {
  std::mt19937 rng = monotile::testing::case_rng();
  served_ = {1, 3};
  Backbone backbone = weights_.backbone;
  backbone.start_layer = served_.first;
  backbone.end_layer = served_.second;
  std::unique_ptr<Group> group = make_single_process_group();
  absl::StatusOr<std::unique_ptr<SpecializedDecode>> decode = SpecializedDecode::create(
      backbone, {.q = kQ, .max_rows = 4}, *group, *device_, jit::Jit::process_default(),
      {.on_progress = nullptr, .log = [](const std::string&) {}, .dependent_launch = dependent_launch});
  ASSERT_TRUE(decode.ok()) << decode.status();
  std::vector<KdaCache> bound = bind_caches(rng);
  bound.erase(std::remove_if(bound.begin(), bound.end(),
                             [](const KdaCache& c) {
                               return c.layer != "model.layers.1.self_attn" && c.layer != "model.layers.2.self_attn";
                             }),
              bound.end());
  Stream stream = *device_->create_stream();
  ASSERT_TRUE((*decode)->prepare_kv(bound, stream).ok());

  StepInputs in = make_step(**decode, 2);
  fill_step(in, 0, rng);
  std::optional<Step> step = plan(**decode, in);
  ASSERT_TRUE(step.has_value());
  ASSERT_TRUE(device_->begin_capture(stream).ok());
  LayerIo io = io_of(in);
  for (int layer : {1, 2}) ASSERT_TRUE((*step->layer(layer))(io, stream).ok());
  absl::StatusOr<Graph> graph = device_->end_capture(stream);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const DevicePtr out = io.delta;

  for (Pad pad : {Pad::kVllm, Pad::kMinusOne}) {
    SCOPED_TRACE(pad == Pad::kVllm ? "padded as vLLM (slot 0, the last end repeated)" : "padded with -1");
    replay_padded(**decode, *graph, stream, in, out, pad, rng);
    if (HasFatalFailure()) return;
  }
}

  // One replay of `graph` (`in`'s step captured) with one real request and one padded as `pad`
  // says, new values everywhere, the caches as they are now; slot 0 (vLLM's null slot) of every
  // cache and the output (NaN) are poisoned first. The replay writes exactly what an eager run of the
  // same inputs writes (checked against the reference layer by layer), every output row is written
  // (the padded request's too), and slot 0 is neither read (its NaN would reach the padded rows)
  // nor written.
  void replay_padded(SpecializedDecode& decode, const Graph& graph, Stream& stream, StepInputs& in, DevicePtr out,
                     Pad pad, std::mt19937& rng) {
  fill_step(in, 1, rng, pad);
  const size_t th = static_cast<size_t>(in.width * config_.hidden_size);
  const size_t conv_slot = static_cast<size_t>(caches_[1].conv_elements / kSlots) * 2;
  const size_t state_slot = static_cast<size_t>(caches_[1].state_elements / kSlots) * 4;
  // Slot 0 holds a huge finite value (the reference's check compares untouched slots bit for bit,
  // and a NaN never passes it): read, it would make the padded rows inf or NaN, unlike the
  // reference's, which reads no state for a slot <= 0.
  const std::vector<uint16_t> poison_bf16(conv_slot / 2, 0x7F00);        // bf16 1.7e38
  const std::vector<uint32_t> poison_f32(state_slot / 4, 0x7E800000u);  // f32 8.5e37
  for (int layer : {1, 2}) {
    write(caches_[layer].conv.address(), poison_bf16);
    write(caches_[layer].state.address(), poison_f32);
  }
  auto expect_slot_zero_untouched = [&](const char* after) {
    for (int layer : {1, 2}) {
      EXPECT_TRUE(read<uint16_t>(caches_[layer].conv.address(), poison_bf16.size()) == poison_bf16)
          << "layer " << layer << ": slot 0 of the conv state written by the " << after;
      EXPECT_TRUE(read<uint32_t>(caches_[layer].state.address(), poison_f32.size()) == poison_f32)
          << "layer " << layer << ": slot 0 of the recurrent state written by the " << after;
    }
  };
  auto expect_every_row_written = [&](const char* by) {
    std::vector<uint16_t> bits = read<uint16_t>(out, th);
    for (size_t i = 0; i < bits.size(); ++i) {
      if (std::isnan(model::bf16_to_float(bits[i]))) {
        ADD_FAILURE() << "the " << by << "'s output row " << i / static_cast<size_t>(config_.hidden_size)
                      << " is NaN: not written, or computed from slot 0";
        return;
      }
    }
  };
  const std::vector<uint16_t> nan_out(th, 0x7FC1);
  const StepBytes before = snapshot_step(in);
  write(out, nan_out);
  ASSERT_TRUE(device_->replay(graph, stream).ok());
  ASSERT_TRUE(device_->synchronize(stream).ok());
  ASSERT_TRUE(decode.check_health().ok()) << decode.check_health();
  expect_slot_zero_untouched("replay");
  expect_every_row_written("replay");
  StepBytes replayed = snapshot_step(in);
  replayed.push_back(read<uint8_t>(out, th * 2));

  restore_step(in, before);
  write(out, nan_out);
  const DevicePtr eager_out = run_layers(decode, in, rng);
  ASSERT_EQ(eager_out, out) << "an eager step writes its output where the captured one did";
  expect_slot_zero_untouched("eager run");
  expect_every_row_written("eager run");
  StepBytes eager = snapshot_step(in);
  eager.push_back(read<uint8_t>(out, th * 2));
  const char* names[] = {"prefix", "blocks", "layer 1 conv", "layer 1 state", "layer 2 conv", "layer 2 state", "out"};
  for (size_t i = 0; i < eager.size(); ++i) EXPECT_TRUE(eager[i] == replayed[i]) << names[i] << " differs";
}

  std::string skip_reason_;

  std::pair<int, int> served_{0, 13};  // the executor's layer range
  model::ModelConfig config_;
  model::RankDims dims_;
  model::RankPlan plan_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<model::SeededWeights> source_;
  DeviceWeights weights_;
  std::map<int, Cache> caches_;
};


}  // namespace monotile::runtime::decode
