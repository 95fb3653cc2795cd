// The kernels of one `monotile layer run` step on a device; see layer_launch.h.
#include "tools/layer_launch.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <utility>

#include "jit/jit.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/k2.h"
#include "support/status_macros.h"

namespace monotile::tools {
namespace {

constexpr uint16_t kPoisonBf16 = 0x7fc1;  // a NaN
constexpr int32_t kPoisonExpert = -7;
// On the CPU device every program is a host thread interpreting its share: a wait's bound must
// cover the others' work on a loaded machine.
constexpr int64_t kInterpreterWaitNs = int64_t{600} * 1000 * 1000 * 1000;

bool on_cpu(const runtime::Device& device) {
  return device.info().vendor == dsl::Vendor::kCpu;
}

}  // namespace

// Device buffers of one layer, freed with it, and the sizes of what it reads back.
struct LayerLaunch::Buffers {
  explicit Buffers(runtime::Device& d) : device(d) {}

  template <typename T>
  absl::StatusOr<runtime::DevicePtr> upload(const std::vector<T>& values) {
    const size_t bytes = std::max<size_t>(values.size() * sizeof(T), 16);
    MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer buffer, device.allocate(bytes));
    if (!values.empty()) {
      MT_RETURN_IF_ERROR(
          device.copy_to_device(buffer.address(), values.data(), values.size() * sizeof(T)));
    }
    const runtime::DevicePtr address = buffer.address();
    owned.push_back(std::move(buffer));
    return address;
  }

  // An input the kernels update in place: its buffer, and a copy restore() puts back.
  template <typename T>
  absl::StatusOr<runtime::DevicePtr> updated(const std::vector<T>& values) {
    MT_ASSIGN_OR_RETURN(runtime::DevicePtr work, upload(values));
    MT_ASSIGN_OR_RETURN(runtime::DevicePtr kept, upload(values));
    restores.push_back({work, kept, values.size() * sizeof(T)});
    return work;
  }

  // An output: filled with `poison` now and by poison().
  template <typename T>
  absl::StatusOr<runtime::DevicePtr> output(size_t count, T poison) {
    const std::vector<T> values(count, poison);
    MT_ASSIGN_OR_RETURN(runtime::DevicePtr address, upload(values));
    poisons.push_back({address, std::string(reinterpret_cast<const char*>(values.data()),
                                            values.size() * sizeof(T))});
    return address;
  }

  // The rank's tensor `name` of the layer as the plan stores it (MXFP4 as its bytes).
  absl::StatusOr<runtime::DevicePtr> weight(const LayerModel& m, const std::string& name) {
    MT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, load_tensor(m, name));
    return upload(bytes);
  }

  template <typename T>
  absl::StatusOr<std::vector<T>> download(runtime::DevicePtr address, size_t count) const {
    std::vector<T> values(count);
    MT_RETURN_IF_ERROR(device.copy_to_host(values.data(), address, count * sizeof(T)));
    return values;
  }

  struct Restore {
    runtime::DevicePtr work, kept;
    size_t bytes;
  };
  struct Poison {
    runtime::DevicePtr address;
    std::string bytes;
  };
  runtime::Device& device;
  std::vector<runtime::DeviceBuffer> owned;
  std::vector<Restore> restores;
  std::vector<Poison> poisons;
  // The buffers K1 and K2 share: the prefix (updated in place by both), the blocks (K1's block
  // write, K2's sources) and o_proj's input.
  runtime::DevicePtr prefix = 0, blocks = 0, core = 0;
  size_t prefix_count = 0, blocks_count = 0;
};

struct LayerLaunch::K1Part {
  kernels::k3::K1Build build;
  runtime::K1Tensors tensors;
  std::optional<runtime::Kernel> kernel;
  std::optional<runtime::K1Launch> launch;
  size_t conv_count = 0, state_count = 0;
};

struct LayerLaunch::K2Part {
  kernels::k3::K2Build build;
  runtime::K2Tensors tensors;
  std::optional<runtime::Kernel> kernel;
  std::optional<runtime::K2Launch> launch;
  size_t rows = 0, routes = 0;
};

absl::StatusOr<LayerBuilds> layer_builds(const LayerModel& m, const LayerStep& step,
                                         const LayerShape& shape, const dsl::Target& target,
                                         bool interpreted, bool exchanging) {
  LayerBuilds b;
  if (shape.attention) {
    MT_ASSIGN_OR_RETURN(
        kernels::k3::K1Build k1,
        kernels::k3::k1_build(m.config, m.layer, m.dims.kda_heads,
                              static_cast<int>(m.dims.in_proj_rows), step.tokens(), step.q,
                              static_cast<int>(step.state_len), step.has_delta));
    b.k1 = kernels::k3::k1_for_target(k1, target);
    if (interpreted) b.k1->wait_ns = kInterpreterWaitNs;
  }
  if (shape.ffn) {
    MT_ASSIGN_OR_RETURN(
        kernels::k3::K2Build k2,
        kernels::k3::k2_build(m.config, m.dims, m.layer, static_cast<int>(shape.core_width),
                              static_cast<int>(step.tokens())));
    b.k2 = kernels::k3::k2_for_target(k2, target);
    if (interpreted) b.k2->wait_ns = kInterpreterWaitNs;
    if (exchanging) {
      // K2's three reductions over the group's peer buffers (kernels/k3/peer_exchange.h).
      b.k2->tp = m.dims.tp;
      b.k2->rank = m.dims.rank;
    }
  }
  return b;
}

LayerLaunch::~LayerLaunch() = default;

absl::StatusOr<std::unique_ptr<LayerLaunch>> LayerLaunch::create(
    const LayerModel& m, const LayerStep& step, const LayerShape& shape, runtime::Device& device,
    const LayerLaunchOptions& options) {
  std::unique_ptr<LayerLaunch> l(new LayerLaunch());
  l->device_ = &device;
  l->shape_ = shape;
  l->layer_ = m.layer;
  l->device_name_ = runtime::describe(device.info());
  l->buffers_ = std::make_unique<Buffers>(device);
  Buffers& t = *l->buffers_;
  const int64_t tokens = step.tokens();
  MT_ASSIGN_OR_RETURN(t.prefix, t.updated(step.prefix));
  MT_ASSIGN_OR_RETURN(t.blocks, t.updated(step.blocks));
  t.prefix_count = step.prefix.size();
  t.blocks_count = step.blocks.size();
  const int64_t blocks_token_stride = shape.block_count * shape.hidden,
                blocks_block_stride = shape.hidden;
  if (shape.attention) {
    // K1 writes core (poisoned until then); K2 reads it.
    MT_ASSIGN_OR_RETURN(t.core,
                        t.output(static_cast<size_t>(tokens * shape.projection), kPoisonBf16));
  } else {
    MT_ASSIGN_OR_RETURN(t.core, t.upload(step.core));
  }
  jit::Jit& jit = jit::Jit::process_default();
  MT_ASSIGN_OR_RETURN(LayerBuilds builds, layer_builds(m, step, shape, device.info().target,
                                                       on_cpu(device), !options.peers.empty()));

  if (shape.attention) {
    l->k1_ = std::make_unique<K1Part>();
    K1Part& p = *l->k1_;
    p.build = *builds.k1;
    const int programs = options.programs > 0 ? std::max(options.programs, p.build.tokens)
                                              : runtime::k1_programs(device.info(), p.build);
    runtime::K1Tensors& k = p.tensors;
    k.prefix = t.prefix;
    if (step.has_delta) {
      MT_ASSIGN_OR_RETURN(k.delta, t.upload(step.delta));
    }
    k.blocks = t.blocks;
    k.blocks_token_stride = blocks_token_stride;
    k.blocks_block_stride = blocks_block_stride;
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
    const int64_t channels = shape.channels();
    MT_ASSIGN_OR_RETURN(k.conv_state, t.updated(step.conv_state));
    k.conv_slot_stride = step.state_len * channels;
    k.conv_channel_stride = step.dim_first ? step.state_len : 1;
    k.conv_entry_stride = step.dim_first ? 1 : channels;
    MT_ASSIGN_OR_RETURN(k.state, t.updated(step.recurrent_state));
    k.state_slot_stride = shape.heads * 128 * 128;
    MT_ASSIGN_OR_RETURN(k.state_indices, t.upload(step.state_indices));
    k.state_indices_stride = step.q;
    MT_ASSIGN_OR_RETURN(k.num_accepted, t.upload(step.num_accepted));
    k.core = t.core;
    p.conv_count = step.conv_state.size();
    p.state_count = step.recurrent_state.size();
    MT_ASSIGN_OR_RETURN(p.kernel, runtime::load_k1(device, p.build, jit));
    MT_ASSIGN_OR_RETURN(p.launch, runtime::K1Launch::create(device, p.build, programs, &*p.kernel));
  }

  if (shape.ffn) {
    l->k2_ = std::make_unique<K2Part>();
    K2Part& p = *l->k2_;
    p.build = *builds.k2;
    const int programs =
        options.programs > 0 ? options.programs : runtime::k2_programs(device.info(), p.build);
    runtime::K2Tensors& k = p.tensors;
    k.core = t.core;
    k.prefix = t.prefix;
    k.blocks = t.blocks;
    k.blocks_token_stride = blocks_token_stride;
    k.blocks_block_stride = blocks_block_stride;
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
    if (p.build.latent_norm) {
      weights.push_back({moe + "routed_expert_norm.weight", &k.latent_norm});
    }
    for (const auto& [name, address] : weights) {
      MT_ASSIGN_OR_RETURN(*address, t.weight(m, name));
    }
    p.rows = static_cast<size_t>(tokens * shape.hidden);
    p.routes = static_cast<size_t>(tokens * p.build.top_k);
    MT_ASSIGN_OR_RETURN(k.out, t.output(p.rows, kPoisonBf16));
    MT_ASSIGN_OR_RETURN(k.route_experts, t.output(p.routes, kPoisonExpert));
    MT_ASSIGN_OR_RETURN(k.route_weights,
                        t.output(p.routes, std::numeric_limits<float>::quiet_NaN()));
    MT_ASSIGN_OR_RETURN(p.kernel, runtime::load_k2(device, p.build, jit));
    MT_ASSIGN_OR_RETURN(runtime::LaunchState state,
                        runtime::LaunchState::create(device, programs, "K2"));
    auto shared = std::make_shared<runtime::LaunchState>(std::move(state));
    shared->set_peers(options.peers);
    MT_ASSIGN_OR_RETURN(p.launch, runtime::K2Launch::create(device, p.build, shared, &*p.kernel));
    // a and y live in the scratch's data, which creation leaves as it finds it: poisoned too.
    const std::string poison(p.rows * 2, '\0');
    Buffers::Poison a{p.launch->a_rows(), poison}, y{p.launch->y_rows(), poison};
    for (Buffers::Poison* rows : {&a, &y}) {
      for (size_t i = 0; i < p.rows; ++i) {
        std::memcpy(rows->bytes.data() + 2 * i, &kPoisonBf16, 2);
      }
      t.poisons.push_back(*rows);
    }
  }
  MT_RETURN_IF_ERROR(l->poison());
  return l;
}

absl::Status LayerLaunch::restore(runtime::Stream& stream) {
  for (const Buffers::Restore& r : buffers_->restores) {
    MT_RETURN_IF_ERROR(device_->copy_on_device_async(r.work, r.kept, r.bytes, stream));
  }
  return absl::OkStatus();
}

absl::Status LayerLaunch::poison() {
  for (const Buffers::Poison& p : buffers_->poisons) {
    MT_RETURN_IF_ERROR(device_->copy_to_device(p.address, p.bytes.data(), p.bytes.size()));
  }
  return absl::OkStatus();
}

absl::Status LayerLaunch::set_epoch(int32_t epoch) {
  if (k1_) MT_RETURN_IF_ERROR(k1_->launch->set_epoch(epoch));
  if (k2_) MT_RETURN_IF_ERROR(k2_->launch->set_epoch(epoch));
  return absl::OkStatus();
}

absl::Status LayerLaunch::launch_k1(runtime::Stream& stream) {
  if (!k1_) return absl::FailedPreconditionError("K1 is not part of this layer's stage");
  return k1_->launch->launch(*k1_->kernel, k1_->tensors, layer_, stream);
}

absl::Status LayerLaunch::launch_k2(runtime::Stream& stream) {
  if (!k2_) return absl::FailedPreconditionError("K2 is not part of this layer's stage");
  return k2_->launch->launch(*k2_->kernel, k2_->tensors, layer_, stream);
}

absl::Status LayerLaunch::check_health() const {
  if (k1_) MT_RETURN_IF_ERROR(k1_->launch->check_health());
  if (k2_) MT_RETURN_IF_ERROR(k2_->launch->check_health());
  return absl::OkStatus();
}

int LayerLaunch::k1_programs() const {
  return k1_ ? k1_->launch->programs() : 0;
}

int LayerLaunch::k2_programs() const {
  return k2_ ? k2_->launch->programs() : 0;
}

absl::StatusOr<LayerOutputs> LayerLaunch::outputs() const {
  const Buffers& t = *buffers_;
  LayerOutputs out;
  const int64_t tokens = k1_ ? k1_->build.tokens : k2_->build.tokens;
  if (k1_) {
    const K1Part& p = *k1_;
    MT_ASSIGN_OR_RETURN(out.x, t.download<uint16_t>(p.launch->x_rows(),
                                                    static_cast<size_t>(tokens * shape_.hidden)));
    MT_ASSIGN_OR_RETURN(
        out.core, t.download<uint16_t>(t.core, static_cast<size_t>(tokens * shape_.projection)));
    MT_ASSIGN_OR_RETURN(out.conv_state, t.download<uint16_t>(p.tensors.conv_state, p.conv_count));
    MT_ASSIGN_OR_RETURN(out.recurrent_state, t.download<float>(p.tensors.state, p.state_count));
    MT_ASSIGN_OR_RETURN(out.blocks, t.download<uint16_t>(t.blocks, t.blocks_count));
  }
  if (k2_) {
    const K2Part& p = *k2_;
    MT_ASSIGN_OR_RETURN(out.a, t.download<uint16_t>(p.launch->a_rows(), p.rows));
    MT_ASSIGN_OR_RETURN(out.y, t.download<uint16_t>(p.launch->y_rows(), p.rows));
    MT_ASSIGN_OR_RETURN(out.out, t.download<uint16_t>(p.tensors.out, p.rows));
    MT_ASSIGN_OR_RETURN(out.route_experts, t.download<int32_t>(p.tensors.route_experts, p.routes));
    MT_ASSIGN_OR_RETURN(out.route_weights, t.download<float>(p.tensors.route_weights, p.routes));
  }
  MT_ASSIGN_OR_RETURN(out.prefix, t.download<uint16_t>(t.prefix, t.prefix_count));
  return out;
}

absl::StatusOr<LayerRun> run_layer(const LayerModel& m, const LayerStep& step,
                                   const LayerShape& shape, runtime::Device& device) {
  MT_ASSIGN_OR_RETURN(std::unique_ptr<LayerLaunch> layer,
                      LayerLaunch::create(m, step, shape, device));
  LayerRun run;
  run.device = layer->device_name();
  MT_RETURN_IF_ERROR(layer->set_epoch(1));
  MT_ASSIGN_OR_RETURN(runtime::Stream stream, device.create_stream());
  auto timed = [&](const char* name, int programs,
                   absl::Status (LayerLaunch::*launch)(runtime::Stream&)) -> absl::Status {
    const auto start = std::chrono::steady_clock::now();
    MT_RETURN_IF_ERROR(((*layer).*launch)(stream));
    MT_RETURN_IF_ERROR(device.synchronize(stream));
    run.kernels.push_back(
        {name, programs,
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
    return layer->check_health();
  };
  if (layer->runs_k1()) {
    MT_RETURN_IF_ERROR(timed("K1", layer->k1_programs(), &LayerLaunch::launch_k1));
  }
  if (layer->runs_k2()) {
    MT_RETURN_IF_ERROR(timed("K2", layer->k2_programs(), &LayerLaunch::launch_k2));
  }
  MT_ASSIGN_OR_RETURN(run.outputs, layer->outputs());
  return run;
}

}  // namespace monotile::tools
