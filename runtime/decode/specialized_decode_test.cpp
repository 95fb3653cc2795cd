// SpecializedDecode on the CPU interpreter at k3-tiny, TP 1 (executor_test_support.h): three steps
// of every served layer, a captured step replayed with new metadata and padding, and the seed's
// refusals through the executor.
#include "runtime/decode/executor_test_support.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "runtime/decode/in_process_group.h"
#include "runtime/decode/launch_counting_device.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {
namespace {

class Executor : public ExecutorFixture {
 protected:
  std::unique_ptr<Device> make_device() override {
    return make_cpu_device(interpreter_loader(ProgramCatalog::process()));
  }
};

TEST_F(Executor, ServesEveryLayerOfThreeStepsOnTheInterpreter) { three_steps(); }

TEST_F(Executor, AStepCapturedOnceReplaysWithNewMetadataAndPadding) { graph_replay(); }

// K1 and K2 built with dependent_launch: on the interpreter both ops do nothing, so the step is the
// one without them, layer by layer against the reference, and its capture replays as an eager run.
TEST_F(Executor, WithDependentLaunchACapturedStepReplaysAsAnEagerRun) { graph_replay(true); }

// The seed's refusals through the executor: each leaves it as it was.
absl::StatusOr<std::unique_ptr<SpecializedDecode>> make_decode(const Backbone& backbone, Group& group, Device& device,
                                                               std::vector<std::string>* lines = nullptr,
                                                               bool other_ranks_stood_in = false) {
  return SpecializedDecode::create(backbone, {.q = 2, .max_rows = 4}, group, device, jit::Jit::process_default(),
                                   {.on_progress = nullptr,
                                    .log = [lines](const std::string& l) {
                                      if (lines) lines->push_back(l);
                                    },
                                    .other_ranks_stood_in = other_ranks_stood_in});
}

// A group that is not the backbone's TP group is refused on every rank, with its reason: a TP 1
// backbone in a group of two ranks, and a TP 2 backbone with a group of one rank.
TEST_F(Executor, AGroupThatIsNotTheBackbonesIsRefusedOnEveryRank) {
  std::vector<std::string> messages(2);
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [&](Group& group) -> absl::Status {
    absl::StatusOr<std::unique_ptr<SpecializedDecode>> decode = make_decode(weights_.backbone, group, *device_);
    messages[static_cast<size_t>(group.rank())] = std::string(decode.status().message());
    return decode.status();
  });
  for (int rank : {0, 1}) {
    EXPECT_EQ(statuses[static_cast<size_t>(rank)].code(), absl::StatusCode::kInvalidArgument) << rank;
    EXPECT_THAT(messages[static_cast<size_t>(rank)],
                ::testing::AllOf(::testing::HasSubstr(absl::StrCat(
                                     "the specialized decode does not support this deployment: a group of 2 TP "
                                     "ranks (this one rank ", rank, ") for weights of TP 1 rank 0: the kernels "
                                     "exchange partial sums with every rank of the group")),
                                 ::testing::HasSubstr("decode_backend \"auto\" runs the stock decode")))
        << rank;
  }
}

TEST_F(Executor, ABackboneAboveTp1WithoutAGroupIsRefused) {
  Backbone backbone = weights_.backbone;
  backbone.tp = 2;
  backbone.rank = 1;
  std::unique_ptr<Group> group = make_single_process_group();
  absl::StatusOr<std::unique_ptr<SpecializedDecode>> decode = make_decode(backbone, *group, *device_);
  ASSERT_FALSE(decode.ok());
  EXPECT_EQ(decode.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(decode.status().message()),
              ::testing::HasSubstr("TP 2 (rank 1) without a group of its TP ranks: the kernels exchange partial "
                                   "sums with the other ranks through the group, so alone this rank would "
                                   "return its own partial sums as each layer's output; expected TP 1, or the "
                                   "group of the 2 TP ranks"));
}

TEST_F(Executor, RefusesAMissingWeightListingIt) {
  Backbone backbone = weights_.backbone;
  backbone.weights[2].erase("self_attn.A_log");
  backbone.weights[3]["self_attn.o_proj.weight"].dtype = model::Dtype::kF32;
  std::unique_ptr<Group> group = make_single_process_group();
  absl::StatusOr<std::unique_ptr<SpecializedDecode>> decode = make_decode(backbone, *group, *device_);
  ASSERT_FALSE(decode.ok());
  EXPECT_EQ(decode.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(decode.status().message()),
              ::testing::AllOf(::testing::HasSubstr("layer 2 weight \"self_attn.A_log\" is missing"),
                               ::testing::HasSubstr("layer 3 weight \"self_attn.o_proj.weight\": dtype differs"),
                               ::testing::HasSubstr("decode_backend \"auto\" runs the stock decode")));
}

// Two ranks each running alone (the tools' stand-in), so that only rank 1's weights refuse.
TEST_F(Executor, OneRankRefusingAloneMakesEveryRankRefuse) {
  std::vector<std::string> messages(2);
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [&](Group& group) -> absl::Status {
    Backbone backbone = weights_.backbone;
    if (group.rank() == 1) backbone.weights[5].erase("self_attn.dt_bias");
    std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(ProgramCatalog::process()));
    absl::StatusOr<std::unique_ptr<SpecializedDecode>> decode =
        make_decode(backbone, group, *device, nullptr, /*other_ranks_stood_in=*/true);
    messages[static_cast<size_t>(group.rank())] = std::string(decode.status().message());
    return decode.status();
  });
  EXPECT_FALSE(statuses[0].ok());
  EXPECT_FALSE(statuses[1].ok());
  EXPECT_THAT(messages[0], ::testing::HasSubstr("another TP rank refused (rank 1)"));
  EXPECT_THAT(messages[1], ::testing::HasSubstr("layer 5 weight \"self_attn.dt_bias\" is missing"));
}

// A rank out of device memory: every allocation fails.
class OutOfMemoryDevice final : public LaunchCountingDevice {
 public:
  using LaunchCountingDevice::LaunchCountingDevice;
  absl::StatusOr<DeviceBuffer> allocate(size_t bytes) override {
    return absl::ResourceExhaustedError(absl::StrCat("out of device memory allocating ", bytes, " bytes"));
  }
};

// Construction past the weights failing on one rank (its allocations): every rank fails and
// returns, rank 1 with its own error, rank 0 naming rank 1 (a rank left in the next collective
// would hang this test until ctest's timeout).
TEST_F(Executor, OneRankFailingConstructionMakesEveryRankFail) {
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [&](Group& group) -> absl::Status {
    Backbone backbone = weights_.backbone;
    backbone.start_layer = 1;
    backbone.end_layer = 3;
    std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(ProgramCatalog::process()));
    if (group.rank() == 1) device = std::make_unique<OutOfMemoryDevice>(std::move(device));
    return make_decode(backbone, group, *device, nullptr, /*other_ranks_stood_in=*/true).status();
  });
  EXPECT_EQ(statuses[0], absl::AbortedError("constructing the specialized decode failed on another TP rank (rank 1)"));
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kResourceExhausted) << statuses[1];
  EXPECT_THAT(std::string(statuses[1].message()),
              ::testing::HasSubstr("constructing the specialized decode: "));
  EXPECT_THAT(std::string(statuses[1].message()), ::testing::HasSubstr("out of device memory allocating "));
}

// prepare_kv's refusals one rank reaches alone: rank 1 missing a served layer's cache, then rank 1
// with nothing bound beside a bound rank 0. Every rank refuses and returns (a rank left in the
// collective would hang this test until ctest's timeout); then both bound, both accept.
TEST_F(Executor, OneRankMissingACacheMakesEveryRankRefuse) {
  std::mt19937 rng = monotile::testing::case_rng();
  const std::vector<KdaCache> caches = bind_caches(rng);  // read by both ranks
  std::vector<std::string> missing(2), unbound(2);
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [&](Group& group) -> absl::Status {
    Backbone backbone = weights_.backbone;
    backbone.start_layer = 1;
    backbone.end_layer = 3;
    MT_ASSIGN_OR_RETURN(std::unique_ptr<SpecializedDecode> decode,
                        make_decode(backbone, group, *device_, nullptr, /*other_ranks_stood_in=*/true));
    const size_t rank = static_cast<size_t>(group.rank());
    MT_ASSIGN_OR_RETURN(Stream stream, device_->create_stream());
    std::vector<KdaCache> mine = caches;
    if (rank == 1) mine.erase(mine.begin() + 1);  // layer 2's
    missing[rank] = std::string(decode->prepare_kv(mine, stream).message());
    mine = rank == 1 ? std::vector<KdaCache>{} : caches;
    unbound[rank] = std::string(decode->prepare_kv(mine, stream).message());
    return decode->prepare_kv(caches, stream);
  });
  for (const absl::Status& status : statuses) EXPECT_TRUE(status.ok()) << status;
  EXPECT_THAT(missing[0], ::testing::HasSubstr("the KV caches: another TP rank refused (rank 1)"));
  EXPECT_THAT(missing[1], ::testing::HasSubstr("prepare_kv: no cache for KDA layer \"model.layers.2.self_attn\""));
  EXPECT_THAT(unbound[0], ::testing::HasSubstr("the KV caches: another TP rank refused (rank 1)"));
  EXPECT_THAT(unbound[1], ::testing::HasSubstr("no KV cache bound on this rank (no caches, or an empty recurrent "
                                               "state) while other TP ranks bound theirs"));
}

TEST_F(Executor, KvBindsPlansAndLaunchesRefuseByTheSeedsRules) {
  std::mt19937 rng = monotile::testing::case_rng();
  std::unique_ptr<Group> group = make_single_process_group();
  std::vector<std::string> lines;
  absl::StatusOr<std::unique_ptr<SpecializedDecode>> made = make_decode(weights_.backbone, *group, *device_, &lines);
  ASSERT_TRUE(made.ok()) << made.status();
  SpecializedDecode& decode = **made;
  StepInputs in = make_step(decode, 2);
  fill_step(in, 0, rng);
  const TensorView state = TensorView::dense(model::Dtype::kF32, {kSlots, dims_.kda_heads, 128, 128}, 0);

  // No KV bound yet (profiling, a dummy run): the host's layers.
  absl::StatusOr<std::optional<Step>> step = decode.plan({.width = 4, .attn_metadata = &in.metadata});
  ASSERT_TRUE(step.ok());
  EXPECT_FALSE(step->has_value());

  // A cache the kernels cannot read: every reason, and nothing bound.
  std::vector<KdaCache> caches = bind_caches(rng);
  std::vector<KdaCache> wrong = caches;
  wrong[1].conv.dtype = model::Dtype::kF32;
  Stream kv_stream = *device_->create_stream();
  absl::Status bad = decode.prepare_kv(wrong, kv_stream);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()), ::testing::HasSubstr("model.layers.2.self_attn"));
  step = decode.plan({.width = 4, .attn_metadata = &in.metadata, .kda_state = &caches[0].recurrent});
  ASSERT_TRUE(step.ok());
  EXPECT_FALSE(step->has_value()) << "a refused bind leaves nothing bound";

  // A served KDA layer without its pair, after a good bind: refused, and the good bind forgotten.
  ASSERT_TRUE(decode.prepare_kv(caches, kv_stream).ok());
  std::vector<KdaCache> missing(caches.begin(), caches.end() - 1);
  bad = decode.prepare_kv(missing, kv_stream);
  EXPECT_THAT(std::string(bad.message()), ::testing::HasSubstr("prepare_kv: no cache for KDA layer \"model.layers.12.self_attn\""));
  step = decode.plan({.width = 4, .attn_metadata = &in.metadata, .kda_state = &caches[0].recurrent});
  ASSERT_TRUE(step.ok());
  EXPECT_FALSE(step->has_value()) << "a refused bind forgets the previous one";

  // A conv state_len the constructor did not build for: prepare_kv builds it, before any step.
  std::vector<KdaCache> longer = caches;
  const int builds = decode.stats().builds;
  for (KdaCache& c : longer) {
    c.conv = TensorView::dense(model::Dtype::kBF16, {kSlots - 2, kQ + 3, 3 * dims_.kda_projection}, c.conv.data);
    c.recurrent.shape[0] = kSlots - 2;
  }
  ASSERT_TRUE(decode.prepare_kv(longer, kv_stream).ok());
  EXPECT_GT(decode.stats().builds, builds);
  EXPECT_THAT(lines.back(), ::testing::HasSubstr("the bound KV caches need"));
  ASSERT_TRUE(decode.prepare_kv(caches, kv_stream).ok());
  EXPECT_EQ(lines.size(), 2u) << "rebinding a state_len already built builds nothing";

  // Widths without kernels, and every step_reason: the host's layers.
  for (int width : {3, 6}) {
    step = decode.plan({.width = width, .attn_metadata = &in.metadata, .kda_state = &caches[0].recurrent});
    ASSERT_TRUE(step.ok());
    EXPECT_FALSE(step->has_value()) << width;
  }
  AttnMetadata prefill = in.metadata;
  prefill.begin()->second.num_prefills = 1;
  step = decode.plan({.width = 4, .attn_metadata = &prefill, .kda_state = &caches[0].recurrent});
  ASSERT_TRUE(step.ok());
  EXPECT_FALSE(step->has_value());
  EXPECT_EQ(step_reason(&prefill, decode.kda_prefix(), 4), "not pure decode");

  // The cache re-bound without prepare_kv: the seed's error.
  step = decode.plan({.width = 4, .attn_metadata = &in.metadata, .kda_state = &state});
  EXPECT_EQ(step.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(step.status().message()),
              ::testing::HasSubstr("was re-bound without prepare_kv: call prepare_kv after every KV-cache bind"));

  // A launch without a pending delta, an MLA layer without the host's attention: refused before
  // anything is enqueued.
  step = decode.plan({.width = 4, .attn_metadata = &in.metadata, .kda_state = &caches[0].recurrent});
  ASSERT_TRUE(step.ok() && step->has_value());
  Stream stream = *device_->create_stream();
  LayerIo io = io_of(in);
  io.delta = 0;
  absl::Status refused = (*(*step)->layer(1))(io, stream);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()), ::testing::HasSubstr("layer 1: no pending delta"));
  io = io_of(in);
  refused = (*(*step)->layer(3))(io, stream);
  EXPECT_THAT(std::string(refused.message()), ::testing::HasSubstr("layer 3 is an MLA layer: LayerIo::attention is empty"));
  EXPECT_EQ(io.delta, in.first_delta.address()) << "a refused launch returns no output";
  // A prefix the kernels could not read in 16-byte vectors (a view 2 bytes into its buffer).
  io = io_of(in);
  io.prefix += 2;
  refused = (*(*step)->layer(1))(io, stream);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr(absl::StrCat("layer 1: prefix starts at byte address 0x", absl::Hex(io.prefix),
                                                ", not a multiple of 16")));
  EXPECT_EQ(io.delta, in.first_delta.address()) << "a refused launch returns no output";
}

// A stalled rank: rank 1's K2 stalls past the waits' bound at epoch 2. Its waits give up into its
// health words and the launch ends; FailStop's copy lands after step 2's vote, so both ranks run on
// and raise together at the next vote (step 4), naming rank 1. Rank 0 never raises alone. Each rank
// runs alone (the tools' stand-in): the vote, not an exchange, ties them.
TEST_F(Executor, AStalledRankMakesEveryRankRaiseAtTheSameStep) {
  constexpr int64_t kWaitNs = 8'000'000'000, kFaultNs = 20'000'000'000;  // the interpreter's pace
  std::vector<int> raised_at(2, 0);
  std::vector<std::string> messages(2);
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [&](Group& group) -> absl::Status {
    std::mt19937 rng = monotile::testing::named_rng(absl::StrCat("stalled rank ", group.rank()));
    Backbone backbone = weights_.backbone;
    backbone.start_layer = 1;
    backbone.end_layer = 2;
    ExecutorOptions options{.check_every = 2, .wait_ns = kWaitNs, .on_progress = nullptr,
                            .log = [](const std::string&) {}, .other_ranks_stood_in = true};
    if (group.rank() == 1) {
      options.fault_epoch = 2;
      options.fault_layer = 1;
      options.fault_ns = kFaultNs;
    }
    MT_ASSIGN_OR_RETURN(std::unique_ptr<SpecializedDecode> decode,
                        SpecializedDecode::create(backbone, {.q = kQ, .max_rows = 4}, group, *device_,
                                                  jit::Jit::process_default(), options));
    // This rank's own caches of layer 1.
    const int64_t channels = 3 * dims_.kda_projection, state_elements = int64_t{kSlots} * dims_.kda_heads * 128 * 128;
    MT_ASSIGN_OR_RETURN(DeviceBuffer conv, device_->allocate(static_cast<size_t>(kSlots * (kQ + 2) * channels) * 2));
    MT_ASSIGN_OR_RETURN(DeviceBuffer state, device_->allocate(static_cast<size_t>(state_elements) * 4));
    write(conv.address(), random_bf16(static_cast<size_t>(kSlots * (kQ + 2) * channels), 1.0, rng));
    write(state.address(), std::vector<float>(static_cast<size_t>(state_elements), 0.01f));
    const KdaCache cache{"model.layers.1.self_attn",
                         TensorView::dense(model::Dtype::kBF16, {kSlots, kQ + 2, channels}, conv.address()),
                         TensorView::dense(model::Dtype::kF32, {kSlots, dims_.kda_heads, 128, 128}, state.address())};
    MT_ASSIGN_OR_RETURN(Stream stream, device_->create_stream());
    MT_RETURN_IF_ERROR(decode->prepare_kv({cache}, stream));
    StepInputs in = make_step(*decode, 2);
    for (int step = 1; step <= 6; ++step) {
      fill_step(in, 0, rng);
      MT_ASSIGN_OR_RETURN(std::optional<Step> planned,
                          decode->plan({.width = in.width, .attn_metadata = &in.metadata, .kda_state = &cache.recurrent}));
      LayerIo io = io_of(in);
      MT_RETURN_IF_ERROR((*planned->layer(1))(io, stream));
      absl::Status voted = decode->after_step(stream);
      if (!voted.ok()) {
        raised_at[static_cast<size_t>(group.rank())] = step;
        messages[static_cast<size_t>(group.rank())] = std::string(voted.message());
        return absl::OkStatus();
      }
      MT_RETURN_IF_ERROR(device_->synchronize(stream));
    }
    return absl::OkStatus();
  });
  for (const absl::Status& status : statuses) EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(raised_at, (std::vector<int>{4, 4}));
  for (const std::string& message : messages) EXPECT_THAT(message, ::testing::HasSubstr("TP rank 1 gave up a wait"));
}

}  // namespace
}  // namespace monotile::runtime::decode
