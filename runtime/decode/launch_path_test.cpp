// A planned step's host path allocates nothing: plan, Step::layer, every launch it enqueues (the
// epoch bump, K1, K2) and after_step, at k3-tiny's layers and over 100 steps of K3's 92. The device
// under the executor counts launches and runs none, so what is counted is the executor's own work;
// the test binary replaces the global operator new to count the allocations of the test's thread.
#include <cstdlib>
#include <new>

#include "runtime/decode/executor_test_support.h"
#include "runtime/decode/launch_counting_device.h"

namespace {

thread_local bool counting = false;
thread_local int64_t allocations = 0;

}  // namespace

void* operator new(size_t bytes) {
  if (counting) ++allocations;
  if (void* memory = std::malloc(bytes == 0 ? 1 : bytes)) return memory;
  throw std::bad_alloc();
}
// GCC takes a free() in operator delete for a mismatch; here operator new is malloc().
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* memory) noexcept {
  std::free(memory);
}
void operator delete(void* memory, size_t) noexcept {
  std::free(memory);
}
#pragma GCC diagnostic pop

namespace monotile::runtime::decode {
namespace {

class Paused {
 public:
  Paused() : was_(counting) { counting = false; }
  ~Paused() { counting = was_; }

 private:
  bool was_;
};

// Counting stops inside the wrapped device's async calls: the CPU device queues host work for
// them, which is not the executor's.
class PausingDevice final : public LaunchCountingDevice {
 public:
  using LaunchCountingDevice::LaunchCountingDevice;
  absl::Status copy_to_device_async(DevicePtr to, const void* from, size_t bytes,
                                    Stream& stream) override {
    Paused paused;
    return LaunchCountingDevice::copy_to_device_async(to, from, bytes, stream);
  }
  absl::Status copy_to_host_async(void* to, DevicePtr from, size_t bytes, Stream& stream) override {
    Paused paused;
    return LaunchCountingDevice::copy_to_host_async(to, from, bytes, stream);
  }
  absl::Status copy_on_device_async(DevicePtr to, DevicePtr from, size_t bytes,
                                    Stream& stream) override {
    Paused paused;
    return LaunchCountingDevice::copy_on_device_async(to, from, bytes, stream);
  }
  absl::Status fill_bytes_async(DevicePtr to, uint8_t value, size_t bytes,
                                Stream& stream) override {
    Paused paused;
    return LaunchCountingDevice::fill_bytes_async(to, value, bytes, stream);
  }
};

class LaunchPath : public ExecutorFixture {
 protected:
  std::unique_ptr<Device> make_device() override {
    auto device = std::make_unique<PausingDevice>(
        make_cpu_device(interpreter_loader(ProgramCatalog::process())));
    counter_ = device.get();
    return device;
  }
  LaunchCountingDevice* counter_ = nullptr;
};

TEST_F(LaunchPath, AStepOfEveryServedLayerAllocatesNothingOnTheHost) {
  std::mt19937 rng = monotile::testing::case_rng();
  std::unique_ptr<Group> group = make_single_process_group();
  absl::StatusOr<std::unique_ptr<SpecializedDecode>> decode = SpecializedDecode::create(
      weights_.backbone, {.q = kQ, .max_rows = 4}, *group, *device_, jit::Jit::process_default(),
      {.on_progress = nullptr, .log = [](const std::string&) {}});
  ASSERT_TRUE(decode.ok()) << decode.status();
  Stream stream = *device_->create_stream();
  ASSERT_TRUE((*decode)->prepare_kv(bind_caches(rng), stream).ok());
  StepInputs in = make_step(**decode, 2);
  fill_step(in, 1, rng);
  const TensorView first_state =
      TensorView::dense(model::Dtype::kF32, {kSlots, dims_.kda_heads, 128, 128},
                        caches_.begin()->second.state.address());
  const ::monotile::runtime::decode::StepInputs step_inputs{
      .width = in.width, .attn_metadata = &in.metadata, .kda_state = &first_state};
  // The host's MLA attention: a stand-in that returns the o_proj input's buffer.
  const DevicePtr core = in.core.address();
  LayerIo io = io_of(in);
  io.attention = [core](int, const LayerIo&, Stream&) -> absl::StatusOr<DevicePtr> { return core; };

  // What one step enqueues: the epoch bump, K1 and K2 of each KDA layer, K2 of each MLA layer.
  int kda = 0, mla = 0;
  for (int layer = 0; layer < config_.num_hidden_layers; ++layer) {
    kda += config_.served_kind(layer) == model::ServedKind::kWhole;
    mla += config_.served_kind(layer) == model::ServedKind::kFfn;
  }
  for (int step = 0; step < 4; ++step) {
    const int launched = counter_->launches();
    io.delta = in.first_delta.address();
    // The first step is not counted: it may fill what a run keeps (the runtime's one-time setup).
    counting = step > 0;
    allocations = 0;
    absl::StatusOr<std::optional<Step>> planned = (*decode)->plan(step_inputs);
    bool all_ok = planned.ok() && planned->has_value();
    if (all_ok) {
      for (int layer = 0; layer < config_.num_hidden_layers; ++layer) {
        std::optional<LayerLaunch> launch = (*planned)->layer(layer);
        if (launch) all_ok = all_ok && (*launch)(io, stream).ok();
      }
      all_ok = all_ok && (*decode)->after_step(stream).ok();
    }
    counting = false;
    ASSERT_TRUE(all_ok) << "step " << step << " was refused or failed";
    EXPECT_EQ(counter_->launches() - launched, 1 + 2 * kda + mla) << "step " << step;
    if (step > 0) {
      EXPECT_EQ(allocations, 0) << "step " << step << " allocated on the host";
    }
  }
}

// K3's 92 served layers at TP 8 (rank 0's shapes, q 4), over 100 planned steps: no step after the
// first allocates. The weights, caches and step tensors are views at one address the device never
// reads (its launches are counted, not run).
TEST(LaunchPathK3, AHundredStepsOfNinetyTwoLayersAllocateNothing) {
  const model::ModelConfig config = *model::load_config("k3");
  constexpr int kTp = 8, kQ = 4, kRequests = 2, kSteps = 100;
  constexpr DevicePtr kNowhere = 0x1000;
  const model::RankPlan plan = *model::plan_rank(config, kTp, 0);
  const model::RankDims dims = *model::rank_dims(config, kTp, 0);
  Backbone backbone{.config = &config,
                    .tp = kTp,
                    .rank = 0,
                    .start_layer = 0,
                    .end_layer = config.num_hidden_layers,
                    .weights = {},
                    .experts_layout = std::string(kCheckpointExpertsLayout)};
  for (const model::LayerPlan& layer : plan.layers) {
    if (layer.layer < 0) continue;
    for (const model::RankTensor& t : layer.tensors) {
      backbone.weights[layer.layer][t.name] = TensorView::dense(t.dtype, t.shape, kNowhere);
    }
  }
  auto device = std::make_unique<PausingDevice>(
      make_cpu_device(interpreter_loader(ProgramCatalog::process())));
  std::unique_ptr<Group> group = make_single_process_group();
  absl::StatusOr<std::unique_ptr<SpecializedDecode>> made = SpecializedDecode::create(
      backbone, {.q = kQ, .max_rows = 8}, *group, *device, jit::Jit::process_default(),
      // No fail-stop vote within the steps: the vote is a gather over the host's group, whose
      // result the group allocates. One rank of TP 8 alone (tp_reasons.h).
      {.check_every = kSteps + 1,
       .on_progress = nullptr,
       .log = [](const std::string&) {},
       .other_ranks_stood_in = true});
  ASSERT_TRUE(made.ok()) << made.status();
  SpecializedDecode& decode = **made;
  ASSERT_EQ(decode.stats().layers, 92);

  std::vector<KdaCache> caches;
  int kda = 0;
  for (int layer = 0; layer < config.num_hidden_layers; ++layer) {
    if (config.served_kind(layer) != model::ServedKind::kWhole) continue;
    ++kda;
    caches.push_back(
        {decode.attention_name(layer),
         TensorView::dense(model::Dtype::kBF16, {64, kQ + 2, 3 * dims.kda_projection}, kNowhere),
         TensorView::dense(model::Dtype::kF32, {64, dims.kda_heads, 128, 128}, kNowhere)});
  }
  Stream stream = *device->create_stream();
  ASSERT_TRUE(decode.prepare_kv(caches, stream).ok());
  const SpecMetadata m{
      .spec_sequence_masks = true,
      .num_spec_decodes = kRequests,
      .uniform_spec_sequence_length = kQ,
      .spec_state_indices = TensorView::dense(model::Dtype::kI32, {kRequests, kQ}, kNowhere),
      .num_accepted_tokens = TensorView::dense(model::Dtype::kI32, {kRequests}, kNowhere),
      .spec_query_start_loc = TensorView::dense(model::Dtype::kI32, {kRequests + 1}, kNowhere)};
  const AttnMetadata metadata{{decode.kda_prefix(), m}};
  const StepInputs inputs{
      .width = kRequests * kQ, .attn_metadata = &metadata, .kda_state = &caches.front().recurrent};
  const int64_t h = config.hidden_size;
  LayerIo io{.prefix = kNowhere,
             .blocks = kNowhere,
             .blocks_token_stride = config.block_count() * h,
             .blocks_block_stride = h,
             .delta = kNowhere,
             .attention = [](int, const LayerIo&, Stream&) -> absl::StatusOr<DevicePtr> {
               return kNowhere;
             }};

  // The counter sees an allocation made while it counts (a direct call: never elided).
  counting = true;
  allocations = 0;
  static void* volatile sink = nullptr;
  sink = ::operator new(16);
  counting = false;
  ::operator delete(sink);
  ASSERT_EQ(allocations, 1);

  int64_t allocated = 0;
  for (int step = 0; step < kSteps; ++step) {
    const int launched = device->launches();
    io.delta = kNowhere;
    counting = step > 0;  // the first step may fill what a run keeps
    allocations = 0;
    absl::StatusOr<std::optional<Step>> planned = decode.plan(inputs);
    bool all_ok = planned.ok() && planned->has_value();
    for (int layer = 0; all_ok && layer < config.num_hidden_layers; ++layer) {
      if (std::optional<LayerLaunch> launch = (*planned)->layer(layer))
        all_ok = (*launch)(io, stream).ok();
    }
    all_ok = all_ok && decode.after_step(stream).ok();
    counting = false;
    allocated += allocations;
    ASSERT_TRUE(all_ok) << "step " << step << " was refused or failed";
    ASSERT_EQ(device->launches() - launched, 1 + 2 * kda + (92 - kda)) << "step " << step;
  }
  EXPECT_EQ(allocated, 0) << "host allocations over steps 1.." << kSteps - 1;
}

}  // namespace
}  // namespace monotile::runtime::decode
