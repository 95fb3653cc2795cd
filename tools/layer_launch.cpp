// The kernels of one `monotile layer run` step on a device; see layer_launch.h.
#include "tools/layer_launch.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <utility>

#include "jit/jit.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/k2.h"
#include "runtime/k1_launch.h"
#include "runtime/k2_launch.h"
#include "support/status_macros.h"

namespace monotile::tools {
namespace {

constexpr uint16_t kPoisonBf16 = 0x7fc1;  // a NaN
// On the CPU device every program is a host thread interpreting its share: a wait's bound must
// cover the others' work on a loaded machine.
constexpr int64_t kInterpreterWaitNs = int64_t{600} * 1000 * 1000 * 1000;

// Device buffers of one run, freed with it.
class DeviceTensors {
 public:
  explicit DeviceTensors(runtime::Device& device) : device_(device) {}

  template <typename T>
  absl::StatusOr<runtime::DevicePtr> upload(const std::vector<T>& values) {
    const size_t bytes = std::max<size_t>(values.size() * sizeof(T), 16);
    MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer buffer, device_.allocate(bytes));
    if (!values.empty()) {
      MT_RETURN_IF_ERROR(
          device_.copy_to_device(buffer.address(), values.data(), values.size() * sizeof(T)));
    }
    const runtime::DevicePtr address = buffer.address();
    buffers_.push_back(std::move(buffer));
    return address;
  }

  // The rank's tensor `name` of the layer as the plan stores it (MXFP4 as its bytes).
  absl::StatusOr<runtime::DevicePtr> weight(const LayerModel& m, const std::string& name) {
    MT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, load_tensor(m, name));
    return upload(bytes);
  }

  template <typename T>
  absl::StatusOr<std::vector<T>> download(runtime::DevicePtr address, size_t count) {
    std::vector<T> values(count);
    MT_RETURN_IF_ERROR(device_.copy_to_host(values.data(), address, count * sizeof(T)));
    return values;
  }

 private:
  runtime::Device& device_;
  std::vector<runtime::DeviceBuffer> buffers_;
};

bool on_cpu(const runtime::Device& device) {
  return device.info().vendor == dsl::Vendor::kCpu;
}

// The buffers K1 and K2 share: the prefix (updated in place by both), the blocks (K1's block
// write, K2's sources) and o_proj's input.
struct Shared {
  runtime::DevicePtr prefix = 0, blocks = 0, core = 0;
  int64_t blocks_token_stride = 0, blocks_block_stride = 0;
};

absl::Status launch_k1(const LayerModel& m, const LayerStep& step, const LayerShape& shape,
                       runtime::Device& device, DeviceTensors& t, const Shared& shared,
                       LayerRun& run) {
  MT_ASSIGN_OR_RETURN(
      kernels::k3::K1Build build,
      kernels::k3::k1_build(m.config, m.layer, m.dims.kda_heads,
                            static_cast<int>(m.dims.in_proj_rows), step.tokens(), step.q,
                            static_cast<int>(step.state_len), step.has_delta));
  const int programs = runtime::k1_programs(device.info(), build);
  build = kernels::k3::k1_for_target(build, device.info().target);
  if (on_cpu(device)) build.wait_ns = kInterpreterWaitNs;
  runtime::K1Tensors k;
  k.prefix = shared.prefix;
  if (step.has_delta) {
    MT_ASSIGN_OR_RETURN(k.delta, t.upload(step.delta));
  }
  k.blocks = shared.blocks;
  k.blocks_token_stride = shared.blocks_token_stride;
  k.blocks_block_stride = shared.blocks_block_stride;
  const std::pair<const char*, runtime::DevicePtr*> weights[] = {
      {"self_attention_res_norm.weight", &k.ares_norm},
      {"self_attention_res_proj.weight", &k.ares_proj},
      {"input_layernorm.weight", &k.in_norm},
      {"self_attn.in_proj_qkvgfab.weight", &k.w_in},
      {"self_attn.f_b_proj.weight", &k.w_fb},
      {"self_attn.conv1d.weight", &k.conv_w},
      {"self_attn.A_log", &k.a_log},
      {"self_attn.dt_bias", &k.dt_bias},
      {"self_attn.o_norm.weight", &k.o_norm}};
  for (const auto& [name, address] : weights) {
    MT_ASSIGN_OR_RETURN(*address, t.weight(m, name));
  }
  const int64_t channels = shape.channels(), tokens = step.tokens();
  MT_ASSIGN_OR_RETURN(k.conv_state, t.upload(step.conv_state));
  k.conv_slot_stride = step.state_len * channels;
  k.conv_channel_stride = step.dim_first ? step.state_len : 1;
  k.conv_entry_stride = step.dim_first ? 1 : channels;
  MT_ASSIGN_OR_RETURN(k.state, t.upload(step.recurrent_state));
  k.state_slot_stride = shape.heads * 128 * 128;
  MT_ASSIGN_OR_RETURN(k.state_indices, t.upload(step.state_indices));
  k.state_indices_stride = step.q;
  MT_ASSIGN_OR_RETURN(k.num_accepted, t.upload(step.num_accepted));
  k.core = shared.core;

  MT_ASSIGN_OR_RETURN(runtime::Kernel kernel,
                      runtime::load_k1(device, build, jit::Jit::process_default()));
  MT_ASSIGN_OR_RETURN(runtime::K1Launch launch,
                      runtime::K1Launch::create(device, build, programs, &kernel));
  MT_RETURN_IF_ERROR(launch.set_epoch(1));
  MT_ASSIGN_OR_RETURN(runtime::Stream stream, device.create_stream());
  const auto start = std::chrono::steady_clock::now();
  MT_RETURN_IF_ERROR(launch.launch(kernel, k, m.layer, stream));
  MT_RETURN_IF_ERROR(device.synchronize(stream));
  run.kernels.push_back(
      {"K1", programs,
       std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
  MT_RETURN_IF_ERROR(launch.check_health());

  LayerOutputs& out = run.outputs;
  MT_ASSIGN_OR_RETURN(
      out.x, t.download<uint16_t>(launch.x_rows(), static_cast<size_t>(tokens * shape.hidden)));
  MT_ASSIGN_OR_RETURN(out.core,
                      t.download<uint16_t>(k.core, static_cast<size_t>(tokens * shape.projection)));
  MT_ASSIGN_OR_RETURN(out.conv_state, t.download<uint16_t>(k.conv_state, step.conv_state.size()));
  MT_ASSIGN_OR_RETURN(out.recurrent_state, t.download<float>(k.state, step.recurrent_state.size()));
  return absl::OkStatus();
}

absl::Status launch_k2(const LayerModel& m, const LayerStep& step, const LayerShape& shape,
                       runtime::Device& device, DeviceTensors& t, const Shared& shared,
                       LayerRun& run) {
  const int64_t tokens = step.tokens();
  MT_ASSIGN_OR_RETURN(
      kernels::k3::K2Build build,
      kernels::k3::k2_build(m.config, m.dims, m.layer, static_cast<int>(shape.core_width),
                            static_cast<int>(tokens)));
  const int programs = runtime::k2_programs(device.info(), build);
  build = kernels::k3::k2_for_target(build, device.info().target);
  if (on_cpu(device)) build.wait_ns = kInterpreterWaitNs;
  runtime::K2Tensors k;
  k.core = shared.core;
  k.prefix = shared.prefix;
  k.blocks = shared.blocks;
  k.blocks_token_stride = shared.blocks_token_stride;
  k.blocks_block_stride = shared.blocks_block_stride;
  const std::string moe = "block_sparse_moe.";
  std::vector<std::pair<std::string, runtime::DevicePtr*>> weights = {
      {"self_attn.o_proj.weight", &k.w_o},
      {"mlp_res_norm.weight", &k.mlp_res_norm},
      {"mlp_res_proj.weight", &k.mlp_res_proj},
      {"post_attention_layernorm.weight", &k.post_norm},
      {moe + "gate.weight", &k.w_gate},
      {moe + "gate.e_score_correction_bias", &k.gate_bias},
      {moe + "routed_expert_down_proj.weight", &k.w_ld},
      {moe + "shared_experts.gate_up_proj.weight", &k.w_gu},
      {moe + "shared_experts.down_proj.weight", &k.w_sd},
      {moe + "experts.w13_weight", &k.w13},
      {moe + "experts.w13_weight_scale", &k.w13_scale},
      {moe + "experts.w2_weight", &k.w2},
      {moe + "experts.w2_weight_scale", &k.w2_scale},
      {moe + "routed_expert_up_proj.weight", &k.w_up}};
  if (build.latent_norm) weights.push_back({moe + "routed_expert_norm.weight", &k.latent_norm});
  for (const auto& [name, address] : weights) {
    MT_ASSIGN_OR_RETURN(*address, t.weight(m, name));
  }
  const size_t rows = static_cast<size_t>(tokens * shape.hidden),
               routes = static_cast<size_t>(tokens * build.top_k);
  MT_ASSIGN_OR_RETURN(k.out, t.upload(std::vector<uint16_t>(rows, kPoisonBf16)));
  MT_ASSIGN_OR_RETURN(k.route_experts, t.upload(std::vector<int32_t>(routes, -7)));
  MT_ASSIGN_OR_RETURN(k.route_weights, t.upload(std::vector<float>(
                                           routes, std::numeric_limits<float>::quiet_NaN())));

  MT_ASSIGN_OR_RETURN(runtime::Kernel kernel,
                      runtime::load_k2(device, build, jit::Jit::process_default()));
  MT_ASSIGN_OR_RETURN(runtime::K2Launch launch,
                      runtime::K2Launch::create(device, build, programs, &kernel));
  // a and y live in the scratch's data, which creation leaves as it finds it: poisoned here.
  const std::vector<uint16_t> poison(rows, kPoisonBf16);
  MT_RETURN_IF_ERROR(device.copy_to_device(launch.a_rows(), poison.data(), rows * 2));
  MT_RETURN_IF_ERROR(device.copy_to_device(launch.y_rows(), poison.data(), rows * 2));
  MT_RETURN_IF_ERROR(launch.set_epoch(1));
  MT_ASSIGN_OR_RETURN(runtime::Stream stream, device.create_stream());
  const auto start = std::chrono::steady_clock::now();
  MT_RETURN_IF_ERROR(launch.launch(kernel, k, m.layer, stream));
  MT_RETURN_IF_ERROR(device.synchronize(stream));
  run.kernels.push_back(
      {"K2", programs,
       std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
  MT_RETURN_IF_ERROR(launch.check_health());

  LayerOutputs& out = run.outputs;
  MT_ASSIGN_OR_RETURN(out.a, t.download<uint16_t>(launch.a_rows(), rows));
  MT_ASSIGN_OR_RETURN(out.y, t.download<uint16_t>(launch.y_rows(), rows));
  MT_ASSIGN_OR_RETURN(out.out, t.download<uint16_t>(k.out, rows));
  MT_ASSIGN_OR_RETURN(out.route_experts, t.download<int32_t>(k.route_experts, routes));
  MT_ASSIGN_OR_RETURN(out.route_weights, t.download<float>(k.route_weights, routes));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LayerRun> run_layer(const LayerModel& m, const LayerStep& step,
                                   const LayerShape& shape, runtime::Device& device) {
  LayerRun run;
  run.device = runtime::describe(device.info());
  DeviceTensors t(device);
  Shared shared;
  MT_ASSIGN_OR_RETURN(shared.prefix, t.upload(step.prefix));
  MT_ASSIGN_OR_RETURN(shared.blocks, t.upload(step.blocks));
  shared.blocks_token_stride = shape.block_count * shape.hidden;
  shared.blocks_block_stride = shape.hidden;
  if (shape.attention) {
    // K1 writes core (poisoned until then); K2 reads it.
    MT_ASSIGN_OR_RETURN(shared.core,
                        t.upload(std::vector<uint16_t>(
                            static_cast<size_t>(step.tokens() * shape.projection), kPoisonBf16)));
    MT_RETURN_IF_ERROR(launch_k1(m, step, shape, device, t, shared, run));
  } else {
    MT_ASSIGN_OR_RETURN(shared.core, t.upload(step.core));
  }
  if (shape.ffn) MT_RETURN_IF_ERROR(launch_k2(m, step, shape, device, t, shared, run));
  MT_ASSIGN_OR_RETURN(run.outputs.prefix, t.download<uint16_t>(shared.prefix, step.prefix.size()));
  if (shape.attention) {
    MT_ASSIGN_OR_RETURN(run.outputs.blocks,
                        t.download<uint16_t>(shared.blocks, step.blocks.size()));
  }
  return run;
}

}  // namespace monotile::tools
