// A planned step's host path allocates nothing: plan, Step::layer, every launch it enqueues (the
// epoch bump, K1, K2) and after_step between votes. The device under the executor counts launches
// and runs none, so what is counted is the executor's own work; the test binary replaces the
// global operator new to count the allocations of the test's thread.
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
  ASSERT_TRUE((*decode)->prepare_kv(bind_caches(rng)).ok());
  StepInputs in = make_step(**decode, 2);
  fill_step(in, 1, rng);
  const TensorView first_state =
      TensorView::dense(model::Dtype::kF32, {kSlots, dims_.kda_heads, 128, 128},
                        caches_.begin()->second.state.address());
  const ::monotile::runtime::decode::StepInputs step_inputs{
      .width = in.width, .attn_metadata = &in.metadata, .kda_state = &first_state};
  Stream stream = *device_->create_stream();
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

}  // namespace
}  // namespace monotile::runtime::decode
