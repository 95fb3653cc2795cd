// The executor over a group of TP ranks on the interpreter: k3-tiny at TP 2 and 4, each rank a
// thread of an InProcessGroup with its own CPU device, its shards of the same seeded weights
// (upload_rank_weights) and its own KDA caches. Construction makes the group's peer buffer and K2
// builds that exchange partial sums over it; a step over every served layer then gives, on every
// rank, the float64 reference of each layer over all ranks' weights and caches (layer_check.h, the
// partials summed over the ranks), and every rank holds bit for bit rank 0's prefix, blocks and
// MoE output after every layer (one step: the graph test below replays on both parity halves).
// A captured step replays as the eager one on every rank; a stalled rank makes every rank raise
// from after_step at the same vote.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/reference/k3_layer_reference.h"
#include "kernels/reference/k3_parts.h"
#include "model/config.h"
#include "model/dtype.h"
#include "model/seeded_weights.h"
#include "model/shard_plan.h"
#include "runtime/decode/device_weights.h"
#include "runtime/decode/executor_tp_test_support.h"
#include "runtime/decode/in_process_group.h"
#include "runtime/decode/launch_counting_device.h"
#include "runtime/decode/layer_check.h"
#include "runtime/decode/specialized_decode.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"
#include "support/status_macros.h"
#include "tests/testing/seed.h"

namespace monotile::runtime::decode {
namespace {

namespace ref = kernels::reference;
using Vec = std::vector<double>;

Vec values(const std::vector<uint16_t>& bits) {
  Vec out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = model::bf16_to_float(bits[i]);
  return out;
}

// What the ranks hand each other between a layer's launches (host memory, between the group's
// barriers): each rank's KDA caches before the layer and its outputs after.
struct Exchanged {
  std::vector<ref::KdaCache> caches;
  std::vector<std::vector<uint16_t>> prefix, blocks, out;
  std::vector<LayerResult> results;
};

absl::Status barrier(Group& group) {
  return group.all_gather("").status();
}

// One rank's run: construction, its caches bound, `steps` steps of every served layer, each layer
// checked by rank 0 against the reference over every rank (`weights[layer][rank]`).
absl::Status run_rank(Group& group, const model::ModelConfig& config,
                      const std::vector<std::vector<ref::RankLayerWeights>>& weights,
                      Exchanged& shared, int steps, std::vector<std::string>& log) {
  const int tp = group.size(), rank = group.rank();
  const int64_t h = config.hidden_size, block_count = config.block_count();
  MT_ASSIGN_OR_RETURN(model::RankDims dims, model::rank_dims(config, tp, rank));
  std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(ProgramCatalog::process()));
  MT_ASSIGN_OR_RETURN(std::unique_ptr<model::SeededWeights> source,
                      model::SeededWeights::create(config, 5));
  MT_ASSIGN_OR_RETURN(
      DeviceWeights uploaded,
      upload_rank_weights(*device, config, tp, rank, 0, config.num_hidden_layers, *source));
  uploaded.backbone.layers_prefix = "model.layers";
  MT_ASSIGN_OR_RETURN(
      std::unique_ptr<SpecializedDecode> decode,
      SpecializedDecode::create(uploaded.backbone, {.q = kQ, .max_rows = 4}, group, *device,
                                jit::Jit::process_default(),
                                {.on_progress = nullptr, .log = [&](const std::string& line) {
                                   if (rank == 0) log.push_back(line);
                                 }}));
  auto read = [&](DevicePtr at, size_t n) {
    std::vector<uint16_t> out(n);
    EXPECT_TRUE(device->copy_to_host(out.data(), at, n * 2).ok());
    return out;
  };
  auto write = [&](DevicePtr at, const auto& v) {
    EXPECT_TRUE(device->copy_to_device(at, v.data(), v.size() * sizeof(v[0])).ok());
  };
  // This rank's own caches, random (seeded by the rank): conv channels last, recurrent f32.
  std::mt19937 cache_rng =
      monotile::testing::named_rng(absl::StrCat("executor tp caches ", tp, " ", rank));
  const int64_t channels = 3 * dims.kda_projection, state_len = kQ + 2;
  const int64_t conv_elements = kSlots * state_len * channels;
  const int64_t state_elements = int64_t{kSlots} * dims.kda_heads * 128 * 128;
  std::map<int, std::pair<DeviceBuffer, DeviceBuffer>> cache_buffers;
  std::vector<KdaCache> views;
  for (int layer = 0; layer < config.num_hidden_layers; ++layer) {
    if (config.served_kind(layer) != model::ServedKind::kWhole) continue;
    MT_ASSIGN_OR_RETURN(DeviceBuffer conv,
                        device->allocate(static_cast<size_t>(conv_elements) * 2));
    MT_ASSIGN_OR_RETURN(DeviceBuffer state,
                        device->allocate(static_cast<size_t>(state_elements) * 4));
    write(conv.address(), random_bf16(static_cast<size_t>(conv_elements), 1.0, cache_rng));
    std::normal_distribution<float> small(0.0f, 0.1f);
    std::vector<float> s(static_cast<size_t>(state_elements));
    for (float& v : s) v = small(cache_rng);
    write(state.address(), s);
    views.push_back(
        {absl::StrCat("model.layers.", layer, ".self_attn"),
         TensorView::dense(model::Dtype::kBF16, {kSlots, state_len, channels}, conv.address()),
         TensorView::dense(model::Dtype::kF32, {kSlots, dims.kda_heads, 128, 128},
                           state.address())});
    cache_buffers.emplace(layer, std::make_pair(std::move(conv), std::move(state)));
  }
  auto cache_of = [&](int layer) {
    const auto& [conv, state] = cache_buffers.at(layer);
    ref::KdaCache out;
    out.slots = kSlots;
    out.state_len = state_len;
    out.conv = values(read(conv.address(), static_cast<size_t>(conv_elements)));
    std::vector<float> s(static_cast<size_t>(state_elements));
    EXPECT_TRUE(device->copy_to_host(s.data(), state.address(), s.size() * 4).ok());
    out.state.assign(s.begin(), s.end());
    return out;
  };
  MT_ASSIGN_OR_RETURN(Stream stream, device->create_stream());
  MT_RETURN_IF_ERROR(decode->prepare_kv(views, stream));

  // The step's buffers, the same contents on every rank (one seed for all).
  const size_t th = static_cast<size_t>(kWidth * h);
  MT_ASSIGN_OR_RETURN(DeviceBuffer meta_indices, device->allocate(kWidth * 4));
  MT_ASSIGN_OR_RETURN(DeviceBuffer meta_accepted, device->allocate(kRequests * 4));
  MT_ASSIGN_OR_RETURN(DeviceBuffer meta_starts, device->allocate((kRequests + 1) * 4));
  MT_ASSIGN_OR_RETURN(DeviceBuffer prefix, device->allocate(th * 2));
  MT_ASSIGN_OR_RETURN(DeviceBuffer blocks,
                      device->allocate(th * static_cast<size_t>(block_count) * 2));
  MT_ASSIGN_OR_RETURN(DeviceBuffer first_delta, device->allocate(th * 2));
  const int64_t mla_core_all = int64_t{config.num_attention_heads} * config.v_head_dim;
  const int64_t mla_core = int64_t{dims.mla_heads} * config.v_head_dim;
  MT_ASSIGN_OR_RETURN(DeviceBuffer core,
                      device->allocate(static_cast<size_t>(kWidth * mla_core) * 2));
  SpecMetadata m{.spec_sequence_masks = true,
                 .num_spec_decodes = kRequests,
                 .uniform_spec_sequence_length = kQ,
                 .spec_state_indices =
                     TensorView::dense(model::Dtype::kI32, {kRequests, kQ}, meta_indices.address()),
                 .num_accepted_tokens =
                     TensorView::dense(model::Dtype::kI32, {kRequests}, meta_accepted.address()),
                 .spec_query_start_loc =
                     TensorView::dense(model::Dtype::kI32, {kRequests + 1}, meta_starts.address())};
  AttnMetadata metadata = {{decode->kda_prefix(), m}};
  const TensorView first_state = views.front().recurrent;
  std::mt19937 step_rng = monotile::testing::named_rng(absl::StrCat("executor tp steps ", tp));

  for (int s = 0; s < steps; ++s) {
    std::vector<int32_t> indices(kWidth), accepted(kRequests), starts(kRequests + 1, 0);
    for (int i = 0; i < kWidth; ++i)
      indices[static_cast<size_t>(i)] = 1 + (i + 2 * s) % (kSlots - 1);
    for (int n = 0; n < kRequests; ++n) {
      accepted[static_cast<size_t>(n)] = std::uniform_int_distribution<int>(1, kQ)(step_rng);
      starts[static_cast<size_t>(n + 1)] = (n + 1) * kQ;
    }
    write(meta_indices.address(), indices);
    write(meta_accepted.address(), accepted);
    write(meta_starts.address(), starts);
    write(prefix.address(), random_bf16(th, 1.0, step_rng));
    write(blocks.address(), random_bf16(th * static_cast<size_t>(block_count), 1.0, step_rng));
    write(first_delta.address(), random_bf16(th, 0.5, step_rng));
    MT_ASSIGN_OR_RETURN(
        std::optional<Step> step,
        decode->plan({.width = kWidth, .attn_metadata = &metadata, .kda_state = &first_state}));
    if (!step) return absl::InternalError("plan refused a pure spec-verify step");
    LayerIo io{.prefix = prefix.address(),
               .blocks = blocks.address(),
               .blocks_token_stride = block_count * h,
               .blocks_block_stride = h,
               .delta = first_delta.address(),
               .attention = nullptr};
    for (int layer = 1; layer < config.num_hidden_layers; ++layer) {
      std::optional<LayerLaunch> launch = step->layer(layer);
      if (!launch) continue;
      SCOPED_TRACE(absl::StrCat("step ", s, " layer ", layer, " rank ", rank));
      const bool kda = config.is_kda_layer(layer);
      ref::LayerInput in;
      in.prefix = values(read(io.prefix, th));
      in.delta = values(read(io.delta, th));
      in.blocks = values(read(io.blocks, th * static_cast<size_t>(block_count)));
      in.meta = {kRequests, kQ, indices, accepted};
      if (kda) shared.caches[static_cast<size_t>(rank)] = cache_of(layer);
      io.attention = nullptr;
      if (!kda) {
        // The host's half of an MLA layer, as a test stand-in: the delta folded into the prefix,
        // and this rank's heads of one random o_proj input (the same on every rank), whose o_proj
        // over every rank's shard the reference applies.
        const std::vector<uint16_t> all =
            random_bf16(static_cast<size_t>(kWidth * mla_core_all), 1.0, step_rng);
        std::vector<uint16_t> mine;
        for (int t = 0; t < kWidth; ++t) {
          auto from = all.begin() + t * mla_core_all + rank * mla_core;
          mine.insert(mine.end(), from, from + mla_core);
        }
        write(core.address(), mine);
        const Vec core_values = values(all);
        in.attention_output.assign(th, 0.0);
        for (int t = 0; t < kWidth; ++t) {
          Vec a(static_cast<size_t>(h), 0.0);
          for (int r = 0; r < tp; ++r) {
            Vec part = ref::matvec(
                weights[static_cast<size_t>(layer)][static_cast<size_t>(r)].at(
                    "self_attn.o_proj.weight"),
                std::span(core_values).subspan(t * mla_core_all + r * mla_core, mla_core), h,
                mla_core);
            for (int64_t i = 0; i < h; ++i)
              a[static_cast<size_t>(i)] += part[static_cast<size_t>(i)];
          }
          for (int64_t i = 0; i < h; ++i)
            in.attention_output[t * h + i] = model::round_to_bf16(a[static_cast<size_t>(i)]);
        }
        io.attention = [&](int, const LayerIo& at, Stream& on) -> absl::StatusOr<DevicePtr> {
          MT_RETURN_IF_ERROR(device->synchronize(on));
          std::vector<uint16_t> p = read(at.prefix, th), d = read(at.delta, th);
          for (size_t i = 0; i < th; ++i) {
            p[i] = model::bf16_from_double(double(model::bf16_to_float(p[i])) +
                                           model::bf16_to_float(d[i]));
          }
          write(at.prefix, p);
          return core.address();
        };
      }
      MT_RETURN_IF_ERROR((*launch)(io, stream));
      MT_RETURN_IF_ERROR(device->synchronize(stream));
      MT_RETURN_IF_ERROR(decode->check_health());
      shared.prefix[static_cast<size_t>(rank)] = read(io.prefix, th);
      shared.blocks[static_cast<size_t>(rank)] =
          read(io.blocks, th * static_cast<size_t>(block_count));
      shared.out[static_cast<size_t>(rank)] = read(io.delta, th);
      LayerResult& result = shared.results[static_cast<size_t>(rank)];
      result.prefix = values(shared.prefix[static_cast<size_t>(rank)]);
      result.blocks = values(shared.blocks[static_cast<size_t>(rank)]);
      result.out = values(shared.out[static_cast<size_t>(rank)]);
      if (kda) result.cache = cache_of(layer);
      MT_RETURN_IF_ERROR(barrier(group));
      if (kda) in.caches = shared.caches;
      // Every rank against the reference over all ranks (its own caches after the layer), and
      // every rank's outputs bit for bit rank 0's.
      absl::StatusOr<LayerCheck> check =
          check_layer(config, layer, weights[static_cast<size_t>(layer)], in, result, rank);
      EXPECT_TRUE(check.ok()) << check.status();
      if (check.ok()) {
        for (const kernels::k3::OutputCheck& output : check->outputs) {
          EXPECT_TRUE(output.passed())
              << output.name << ": " << output.failures << " failures, worst " << output.worst_ulps
              << " ulps; first: " << output.first_failure;
        }
      }
      EXPECT_EQ(shared.prefix[static_cast<size_t>(rank)], shared.prefix[0])
          << "the prefix differs from rank 0's";
      EXPECT_EQ(shared.blocks[static_cast<size_t>(rank)], shared.blocks[0])
          << "the blocks differ from rank 0's";
      EXPECT_EQ(shared.out[static_cast<size_t>(rank)], shared.out[0])
          << "the MoE output differs from rank 0's";
      MT_RETURN_IF_ERROR(barrier(group));  // rank 0's rows stay until every rank has compared
    }
    MT_RETURN_IF_ERROR(decode->after_step(stream));
  }
  return barrier(group);  // no rank frees its peer buffer while another may still use it
}

class ExecutorTp : public ::testing::TestWithParam<int> {};

TEST_P(ExecutorTp, EveryLayerMatchesTheReferenceOverTheRanksAndEveryRankHoldsTheSameBits) {
  const int tp = GetParam();
  const model::ModelConfig config = *model::load_config("k3-tiny");
  std::unique_ptr<model::SeededWeights> source = *model::SeededWeights::create(config, 5);
  std::vector<std::vector<ref::RankLayerWeights>> weights(
      static_cast<size_t>(config.num_hidden_layers));
  for (int r = 0; r < tp; ++r) {
    const model::RankPlan plan = *model::plan_rank(config, tp, r);
    for (int layer = 1; layer < config.num_hidden_layers; ++layer) {
      absl::StatusOr<ref::RankLayerWeights> w =
          ref::load_rank_layer(plan.layers[static_cast<size_t>(layer)], plan.dims, *source);
      ASSERT_TRUE(w.ok()) << w.status();
      weights[static_cast<size_t>(layer)].push_back(std::move(*w));
    }
  }
  Exchanged shared;
  shared.caches.resize(static_cast<size_t>(tp));
  shared.prefix.resize(static_cast<size_t>(tp));
  shared.blocks.resize(static_cast<size_t>(tp));
  shared.out.resize(static_cast<size_t>(tp));
  shared.results.resize(static_cast<size_t>(tp));
  std::vector<std::string> log;
  std::vector<absl::Status> statuses = InProcessGroup::run(
      tp, [&](Group& group) { return run_rank(group, config, weights, shared, 1, log); });
  for (int r = 0; r < tp; ++r)
    EXPECT_TRUE(statuses[static_cast<size_t>(r)].ok())
        << "rank " << r << ": " << statuses[static_cast<size_t>(r)];
  ASSERT_FALSE(log.empty());
  EXPECT_THAT(log[0], ::testing::HasSubstr(absl::StrCat(
                          "; TP ", tp,
                          " rank 0: K2 exchanges partial sums over the group's peer buffers")));
}

INSTANTIATE_TEST_SUITE_P(Ranks, ExecutorTp, ::testing::Values(2, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return absl::StrCat("tp", info.param);
                         });

// A device that shares no memory with other ranks (Device's default allocate_exportable).
class PlainDevice final : public LaunchCountingDevice {
 public:
  PlainDevice()
      : LaunchCountingDevice(make_cpu_device(interpreter_loader(ProgramCatalog::process()))) {}
  absl::StatusOr<ExportedBuffer> allocate_exportable(size_t bytes) override {
    return Device::allocate_exportable(bytes);
  }
};

// A rank whose device cannot export its peer buffer makes every rank's construction refuse, naming
// it, before any rank builds a kernel.
TEST(ExecutorTpRefusal, ARankThatCannotShareMemoryMakesEveryRankRefuse) {
  const model::ModelConfig config = *model::load_config("k3-tiny");
  std::vector<std::string> messages(2);
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [&](Group& group) -> absl::Status {
    std::unique_ptr<Device> device =
        group.rank() == 1 ? std::unique_ptr<Device>(new PlainDevice())
                          : make_cpu_device(interpreter_loader(ProgramCatalog::process()));
    MT_ASSIGN_OR_RETURN(std::unique_ptr<model::SeededWeights> source,
                        model::SeededWeights::create(config, 5));
    MT_ASSIGN_OR_RETURN(DeviceWeights uploaded,
                        upload_rank_weights(*device, config, 2, group.rank(), 0, 3, *source));
    absl::StatusOr<std::unique_ptr<SpecializedDecode>> decode = SpecializedDecode::create(
        uploaded.backbone, {.q = kQ, .max_rows = 4}, group, *device, jit::Jit::process_default(),
        {.on_progress = nullptr, .log = [](const std::string&) {}});
    messages[static_cast<size_t>(group.rank())] = std::string(decode.status().message());
    return decode.status();
  });
  for (const absl::Status& status : statuses)
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(messages[1], ::testing::HasSubstr("rank 1 could not export its peer buffer"));
  EXPECT_THAT(messages[1], ::testing::HasSubstr("it shares no memory with them"));
  EXPECT_THAT(messages[0], ::testing::HasSubstr("another TP rank refused (rank 1)"));
}

// A step captured once on every rank of TP 2 (the epoch bump, then K1 and K2 of two KDA layers,
// their exchanges inside) after two eager steps with different inputs, replayed on each one's
// inputs (both parity halves): each replay writes bit for bit what the eager step on its inputs
// wrote, the device's epoch counts every step and every replay (the bump is part of the graph),
// and every rank holds the same bits (run_graph_steps).
TEST(ExecutorTpGraph, ACapturedStepReplaysAsTheEagerStepOnEveryRank) {
  const model::ModelConfig config = *model::load_config("k3-tiny");
  std::vector<GraphSteps> got(2);
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [&](Group& group) -> absl::Status {
    MT_ASSIGN_OR_RETURN(
        std::unique_ptr<KdaRank> r,
        KdaRank::create(group, config, {},
                        make_cpu_device(interpreter_loader(ProgramCatalog::process()))));
    MT_ASSIGN_OR_RETURN(got[static_cast<size_t>(group.rank())],
                        run_graph_steps(*r, "executor tp graph step"));
    return group.all_gather("").status();  // no rank frees its peer buffer while another may use it
  });
  for (const absl::Status& status : statuses) ASSERT_TRUE(status.ok()) << status;
  for (int rank = 0; rank < 2; ++rank)
    EXPECT_EQ(graph_steps_verdict(got[static_cast<size_t>(rank)]), "") << "rank " << rank;
  EXPECT_TRUE(got[1].eager == got[0].eager) << "rank 1's eager steps differ from rank 0's";
  EXPECT_TRUE(got[1].replayed == got[0].replayed) << "rank 1's replays differ from rank 0's";
}

// Rank 1's K2 stalls (the fault hook) at epoch 2 past the waits' bound: rank 1's waits on its
// stalled program and rank 0's waits on rank 1's shares give up, and both ranks raise from
// after_step at the same vote (step 2 with check_every 2, or 4 where the failed word's copy
// lands after step 2's vote), naming both ranks; neither hangs.
TEST(ExecutorTpFault, AStallAtOneRankMakesEveryRankRaiseAtTheSameStep) {
  // Waits long enough for a healthy step's peers on a loaded 2-core machine; the stall twice that.
  constexpr int64_t kWaitNs = 5'000'000'000, kFaultNs = 10'000'000'000;
  const model::ModelConfig config = *model::load_config("k3-tiny");
  std::vector<int> raised_at(2, 0);
  std::vector<std::string> messages(2);
  const auto start = std::chrono::steady_clock::now();
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [&](Group& group) -> absl::Status {
    ExecutorOptions options;
    options.check_every = 2;
    options.wait_ns = kWaitNs;
    if (group.rank() == 1) {
      options.fault_epoch = 2;
      options.fault_layer = 1;
      options.fault_ns = kFaultNs;
    }
    MT_ASSIGN_OR_RETURN(
        std::unique_ptr<KdaRank> r,
        KdaRank::create(group, config, options,
                        make_cpu_device(interpreter_loader(ProgramCatalog::process()))));
    std::mt19937 step_rng = monotile::testing::named_rng("executor tp fault steps");
    for (int step = 1; step <= 6; ++step) {
      MT_RETURN_IF_ERROR(r->fill(step_rng));
      MT_RETURN_IF_ERROR(r->enqueue().status());
      absl::Status voted = r->decode().after_step(r->stream());
      if (!voted.ok()) {
        raised_at[static_cast<size_t>(group.rank())] = step;
        messages[static_cast<size_t>(group.rank())] = std::string(voted.message());
        break;
      }
      MT_RETURN_IF_ERROR(r->device().synchronize(r->stream()));
    }
    MT_RETURN_IF_ERROR(r->device().synchronize(r->stream()));
    return group.all_gather("").status();
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const absl::Status& status : statuses) EXPECT_TRUE(status.ok()) << status;
  EXPECT_NE(raised_at[0], 0) << "rank 0 never raised";
  EXPECT_EQ(raised_at[0], raised_at[1]) << "the ranks raised at different steps";
  for (const std::string& message : messages) {
    EXPECT_THAT(message, ::testing::HasSubstr("TP ranks 0, 1 gave up a wait in a layer kernel"));
  }
  EXPECT_LT(seconds, kFaultNs * 1e-9 + 60) << "the ranks ended within the stall plus a margin";
}

}  // namespace
}  // namespace monotile::runtime::decode
