// A program built against the installed package: it writes a tile kernel, runs it on the CPU
// interpreter against the exact answer; builds the specialized decode's executor for the k3-tiny
// checkpoint folder given as its argument and runs one step of every served layer on the
// interpreter, as a C++ host wires it; then compiles the kernel for sm_90a through the JIT and the
// cache twice (the second call must be a cache hit). Exit 0 on success; 77 when no NVRTC is
// installed (after the interpreter parts passed); 1 on any failure.
// usage: consumer CHECKPOINT_DIR
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <monotile/dsl/dsl.h>
#include <monotile/dsl/interp/interpreter.h>
#include <monotile/jit/jit.h>
#include <monotile/jit/program_build.h>
#include <monotile/model/checkpoint.h>
#include <monotile/model/config.h>
#include <monotile/runtime/decode/decode.h>
#include <monotile/runtime/decode/device_weights.h>
#include <monotile/runtime/decode/specialized_decode.h>
#include <monotile/runtime/discovery.h>
#include <monotile/support/version.h>

using namespace monotile::dsl;  // NOLINT: kernels read best with the language's names in scope

namespace {

Program scale_add(int block) {
  Builder b("consumer_scale_add");
  Value x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32)), n = b.arg("n", i32);
  Value offsets = program_id(0) * block + arange(0, block);
  Value mask = offsets < n;
  store(y + offsets, load(x + offsets, mask) * 2.0f + load(y + offsets, mask), mask);
  return b.finish();
}

int fail(const char* what, const absl::Status& status) {
  std::printf("FAIL %s: %s\n", what, std::string(status.message()).c_str());
  return 1;
}

namespace dec = monotile::runtime::decode;
using monotile::runtime::DeviceBuffer;
using monotile::runtime::DevicePtr;

uint16_t bf16(float value) {  // exact for the values used here
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return static_cast<uint16_t>(bits >> 16);
}

// A device buffer of `count` copies of `value`.
template <typename T>
absl::StatusOr<DeviceBuffer> filled(monotile::runtime::Device& device, size_t count, T value) {
  absl::StatusOr<DeviceBuffer> buffer = device.allocate(count * sizeof(T));
  if (!buffer.ok()) return buffer.status();
  const std::vector<T> values(count, value);
  if (absl::Status s = device.copy_to_device(buffer->address(), values.data(), count * sizeof(T)); !s.ok()) return s;
  return buffer;
}

// The executor as a C++ host wires it: the deployment check, the rank's weights from the
// checkpoint, construction, the KV caches bound, one planned step of every served layer, the
// fail-stop vote.
int run_executor(const std::string& checkpoint_dir) {
  absl::StatusOr<monotile::model::ModelConfig> config = monotile::model::load_config(checkpoint_dir);
  if (!config.ok()) return fail("load_config", config.status());
  absl::StatusOr<std::unique_ptr<monotile::model::Checkpoint>> checkpoint =
      monotile::model::Checkpoint::open(checkpoint_dir);
  if (!checkpoint.ok()) return fail("Checkpoint::open", checkpoint.status());
  monotile::runtime::Discovery found = monotile::runtime::discover_devices();
  monotile::runtime::Device* device = nullptr;
  for (const auto& candidate : found.devices) {
    if (candidate->info().vendor == monotile::dsl::Vendor::kCpu) device = candidate.get();
  }
  if (device == nullptr) return fail("discover_devices", absl::NotFoundError("no CPU device"));

  constexpr int kQ = 2;
  dec::DecodeOptions options;
  options.decode_backend = std::string(dec::kSpecializedBackend);
  options.num_speculative_tokens = kQ - 1;
  options.max_rows = 8;
  options.model = &*config;
  options.device = dec::device_facts(device->info());
  absl::StatusOr<std::optional<dec::DecodeConfig>> decode_config = dec::specialized_decode_config(options);
  if (!decode_config.ok()) return fail("specialized_decode_config", decode_config.status());

  const int layers = config->num_hidden_layers;
  absl::StatusOr<dec::DeviceWeights> weights = dec::upload_rank_weights(*device, *config, 1, 0, 0, layers, **checkpoint);
  if (!weights.ok()) return fail("upload_rank_weights", weights.status());
  std::unique_ptr<dec::Group> group = dec::make_single_process_group();
  absl::StatusOr<std::unique_ptr<dec::SpecializedDecode>> made = dec::SpecializedDecode::create(
      weights->backbone, **decode_config, *group, *device, monotile::jit::Jit::process_default());
  if (!made.ok()) return fail("SpecializedDecode::create", made.status());
  dec::SpecializedDecode& decode = **made;

  // The host's stream: every device operation of the executor goes on it.
  absl::StatusOr<monotile::runtime::Stream> stream = device->create_stream();
  if (!stream.ok()) return fail("create_stream", stream.status());
  const absl::StatusOr<monotile::model::RankDims> dims = monotile::model::rank_dims(*config, 1, 0);
  if (!dims.ok()) return fail("rank_dims", dims.status());
  constexpr int64_t kSlots = 4;
  std::vector<DeviceBuffer> cache_buffers;
  std::vector<dec::KdaCache> caches;
  const int64_t channels = 3 * dims->kda_projection;
  for (int layer = 0; layer < layers; ++layer) {
    if (config->served_kind(layer) != monotile::model::ServedKind::kWhole) continue;
    absl::StatusOr<DeviceBuffer> conv = filled<uint16_t>(*device, static_cast<size_t>(kSlots * (kQ + 2) * channels), bf16(0.25f));
    absl::StatusOr<DeviceBuffer> state =
        filled<float>(*device, static_cast<size_t>(kSlots * dims->kda_heads * 128 * 128), 0.01f);
    if (!conv.ok() || !state.ok()) return fail("the KV caches", conv.ok() ? state.status() : conv.status());
    caches.push_back({decode.attention_name(layer),
                      dec::TensorView::dense(monotile::model::Dtype::kBF16, {kSlots, kQ + 2, channels}, conv->address()),
                      dec::TensorView::dense(monotile::model::Dtype::kF32, {kSlots, dims->kda_heads, 128, 128},
                                             state->address())});
    cache_buffers.push_back(std::move(*conv));
    cache_buffers.push_back(std::move(*state));
  }
  if (absl::Status s = decode.prepare_kv(caches, *stream); !s.ok()) return fail("prepare_kv", s);

  // One request of q tokens in slots 1 and 2, both accepted last step.
  const int64_t width = kQ, hidden = config->hidden_size, blocks = config->block_count();
  absl::StatusOr<DeviceBuffer> indices = device->allocate(kQ * 4), accepted = filled<int32_t>(*device, 1, kQ),
                               starts = device->allocate(2 * 4);
  const int32_t index_values[kQ] = {1, 2}, start_values[2] = {0, kQ};
  absl::StatusOr<DeviceBuffer> prefix = filled<uint16_t>(*device, static_cast<size_t>(width * hidden), bf16(0.5f));
  absl::StatusOr<DeviceBuffer> block_buffer = filled<uint16_t>(*device, static_cast<size_t>(width * blocks * hidden), bf16(0.25f));
  absl::StatusOr<DeviceBuffer> delta = filled<uint16_t>(*device, static_cast<size_t>(width * hidden), bf16(0.125f));
  absl::StatusOr<DeviceBuffer> core =
      filled<uint16_t>(*device, static_cast<size_t>(width * dims->mla_heads * config->v_head_dim), bf16(0.0625f));
  for (const auto* buffer : {&indices, &accepted, &starts, &prefix, &block_buffer, &delta, &core}) {
    if (!buffer->ok()) return fail("the step's buffers", buffer->status());
  }
  if (!device->copy_to_device(indices->address(), index_values, sizeof index_values).ok() ||
      !device->copy_to_device(starts->address(), start_values, sizeof start_values).ok()) {
    return fail("the step's metadata", absl::InternalError("copy failed"));
  }
  const dec::SpecMetadata metadata{
      .spec_sequence_masks = true, .num_spec_decodes = 1, .uniform_spec_sequence_length = kQ,
      .spec_state_indices = dec::TensorView::dense(monotile::model::Dtype::kI32, {1, kQ}, indices->address()),
      .num_accepted_tokens = dec::TensorView::dense(monotile::model::Dtype::kI32, {1}, accepted->address()),
      .spec_query_start_loc = dec::TensorView::dense(monotile::model::Dtype::kI32, {2}, starts->address())};
  const dec::AttnMetadata attn_metadata{{decode.kda_prefix(), metadata}};
  absl::StatusOr<std::optional<dec::Step>> step = decode.plan(
      {.width = static_cast<int>(width), .attn_metadata = &attn_metadata, .kda_state = &caches.front().recurrent});
  if (!step.ok()) return fail("plan", step.status());
  if (!step->has_value()) return fail("plan", absl::InternalError("a pure spec-verify step was not planned"));

  // The host's MLA attention, a stand-in here: o_proj's input from a fixed buffer.
  const DevicePtr core_address = core->address();
  dec::LayerIo io{.prefix = prefix->address(), .blocks = block_buffer->address(),
                  .blocks_token_stride = blocks * hidden, .blocks_block_stride = hidden, .delta = delta->address(),
                  .attention = [core_address](int, const dec::LayerIo&, monotile::runtime::Stream&)
                      -> absl::StatusOr<DevicePtr> { return core_address; }};
  int served = 0;
  for (int layer = 0; layer < layers; ++layer) {
    std::optional<dec::LayerLaunch> launch = (*step)->layer(layer);
    if (!launch) continue;  // the host's layer
    if (absl::Status s = (*launch)(io, *stream); !s.ok()) return fail("a layer launch", s);
    ++served;
  }
  if (absl::Status s = decode.after_step(*stream); !s.ok()) return fail("after_step", s);
  if (absl::Status s = device->synchronize(*stream); !s.ok()) return fail("synchronize", s);
  if (absl::Status s = decode.check_health(); !s.ok()) return fail("check_health", s);

  std::vector<uint16_t> out(static_cast<size_t>(width * hidden));
  if (absl::Status s = device->copy_to_host(out.data(), io.delta, out.size() * 2); !s.ok()) return fail("read", s);
  int nonzero = 0;
  for (uint16_t bits : out) {
    uint32_t word = uint32_t{bits} << 16;
    float value;
    std::memcpy(&value, &word, 4);
    if (!std::isfinite(value)) {
      std::printf("FAIL the step's output holds a non-finite value\n");
      return 1;
    }
    nonzero += value != 0.0f;
  }
  if (served != decode.stats().layers || nonzero == 0) {
    std::printf("FAIL %d layers served of %d, %d nonzero outputs\n", served, decode.stats().layers, nonzero);
    return 1;
  }
  std::printf("executor: %d layers of %s served one step of width %d on the interpreter (%d builds), output finite\n",
              served, checkpoint_dir.c_str(), static_cast<int>(width), decode.stats().builds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::printf("monotile %s\n", monotile::version());
  if (argc != 2) {
    std::printf("usage: consumer CHECKPOINT_DIR (a k3-tiny checkpoint: monotile model tiny --out DIR)\n");
    return 1;
  }
  constexpr int kBlock = 64, kCount = 1000;
  const Program program = scale_add(kBlock);

  std::vector<float> x(kCount), y(kCount);
  for (int i = 0; i < kCount; ++i) x[i] = 0.25f * i, y[i] = 3.0f - i;
  const std::vector<float> y_before = y;
  interp::InterpretOptions options;
  options.allocations = {{x.data(), x.size() * sizeof(float), "x"}, {y.data(), y.size() * sizeof(float), "y"}};
  const std::vector<interp::ArgValue> args = {interp::ArgValue::of(x.data()), interp::ArgValue::of(y.data()),
                                               interp::ArgValue::of(kCount)};
  const absl::Status run = interp::interpret(program, {(kCount + kBlock - 1) / kBlock, 1, 1}, args, options);
  if (!run.ok()) return fail("interpret", run);
  for (int i = 0; i < kCount; ++i) {
    if (y[i] != 2.0f * x[i] + y_before[i]) {
      std::printf("FAIL interpret: y[%d] = %g, expected %g\n", i, y[i], 2.0f * x[i] + y_before[i]);
      return 1;
    }
  }
  std::printf("interpreter: %d elements exact\n", kCount);
  if (int status = run_executor(argv[1]); status != 0) return status;

  const absl::StatusOr<Target> target = Target::parse("sm_90a");
  if (!target.ok()) return fail("target", target.status());
  const absl::StatusOr<monotile::jit::ProgramBuild> build = monotile::jit::make_build(program, *target);
  if (!build.ok()) return fail("make_build", build.status());
  const absl::StatusOr<monotile::jit::CompiledBuild> cold = monotile::jit::compile_build(build->build);
  if (!cold.ok() && absl::IsNotFound(cold.status()) ) {
    std::printf("no NVRTC here, compile skipped: %s\n", std::string(cold.status().message()).c_str());
    return 77;
  }
  if (!cold.ok()) return fail("compile_build", cold.status());
  const absl::StatusOr<monotile::jit::CompiledBuild> warm = monotile::jit::compile_build(build->build);
  if (!warm.ok()) return fail("compile_build (warm)", warm.status());
  if (!warm->hit || warm->code_object != cold->code_object) {
    std::printf("FAIL the second compile_build was not the cached code object\n");
    return 1;
  }
  std::printf("sm_90a: %zu-byte code object by %s, key %s; warm call a cache hit in %.2f ms\n",
              cold->code_object.size(), cold->compiler.c_str(), cold->key.hex().c_str(), warm->seconds * 1e3);
  return 0;
}
