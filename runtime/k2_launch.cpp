// K2's binding; see k2_launch.h. Its table names every argument; the build's parameters
// (k2_parameters) are resolved against it once, in create, so a renamed parameter is caught there,
// and a launch places the values by position without allocating.
#include "runtime/k2_launch.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/k3/k2_clock.h"
#include "support/status_macros.h"

namespace monotile::runtime {

using dsl::ScalarType;
using kernels::k3::K2Build;
using kernels::k3::K2Region;

namespace {

// The tag slot of K2 of `layer` (k2.h: 128 + layer, below 256).
constexpr int kK2SlotBase = 128;

}  // namespace

int k2_programs(const DeviceInfo& device, const K2Build&) {
  return device.vendor == dsl::Vendor::kCpu ? 8 : device.compute_units;
}

absl::StatusOr<Kernel> load_k2(Device& device, const K2Build& build, jit::Jit& jit) {
  return load_program(device, kernels::k3::k2_program(build), jit);
}

absl::StatusOr<K2Launch> K2Launch::create(Device& device, const K2Build& build, int programs,
                                          const Kernel* kernel) {
  MT_ASSIGN_OR_RETURN(LaunchState state, LaunchState::create(device, programs, "K2"));
  return create(device, build, std::make_shared<LaunchState>(std::move(state)), kernel);
}

absl::StatusOr<K2Launch> K2Launch::create(Device& device, const K2Build& build,
                                          std::shared_ptr<LaunchState> state, const Kernel* kernel,
                                          Stream* stream) {
  const int programs = state->programs();
  // The launch values (k2.h): the kernel may have been made from another layer's build of this
  // name.
  if (build.nblocks < 0 || build.nblocks > build.max_blocks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "K2 of build \"", kernels::k3::k2_name(build), "\": nblocks ", build.nblocks,
        ", expected 0..", build.max_blocks,
        " (max_blocks); hint: take the build from k2_build, which sets max_blocks to the ",
        "model's block count"));
  }
  K2Launch launch(std::move(state));
  launch.build_ = build;
  launch.layout_ = kernels::k3::k2_scratch(build);
  MT_ASSIGN_OR_RETURN(
      launch.order_,
      ParameterOrder::resolve(kernel ? parameter_names(*kernel) : kernels::k3::k2_parameters(build),
                              launch.table({}, 0),
                              absl::StrCat("K2 of build \"", kernels::k3::k2_name(build), "\"")));
  MT_ASSIGN_OR_RETURN(launch.scratch_, device.allocate(static_cast<size_t>(launch.layout_.bytes)));
  if (build.stage_clock) {
    MT_ASSIGN_OR_RETURN(launch.clock_, device.allocate(static_cast<size_t>(programs) *
                                                       kernels::k3::kK2ClockPoints * 8));
    MT_RETURN_IF_ERROR(device.fill_bytes(launch.clock_.address(), 0, launch.clock_.size()));
  }
  MT_RETURN_IF_ERROR(zero_bytes(device, launch.scratch_.address(),
                                static_cast<size_t>(launch.layout_.zeroed_bytes), stream));
  if (kernel != nullptr) {
    // The binding's types against the kernel's signature, once, in the storage launches reuse.
    MT_RETURN_IF_ERROR(pack_arguments_into(launch.packed_, kernel->name(), kernel->params(),
                                           launch.arguments({}, 0)));
  }
  return launch;
}

K2Launch::Table K2Launch::table(const K2Tensors& t, int layer) const {
  auto pointer = [](DevicePtr address, ScalarType type) {
    return KernelArgument::pointer(reinterpret_cast<const void*>(address), type);
  };
  auto i64 = [](int64_t value) { return KernelArgument::integer(ScalarType::kI64, value); };
  const DevicePtr scratch = scratch_.address();
  const kernels::k3::K2Scratch& s = layout_;
  // Rank r's peer buffer (tp > 1 builds only: a build at TP 1 has no such parameter).
  auto peer = [&](size_t r) {
    return r < state_->peers().size() ? state_->peers()[r] : DevicePtr{0};
  };
  return {{
      {"core", pointer(t.core, ScalarType::kBf16)},
      {"w_o", pointer(t.w_o, ScalarType::kBf16)},
      {"prefix", pointer(t.prefix, ScalarType::kBf16)},
      {"blocks", pointer(t.blocks, ScalarType::kBf16)},
      {"blocks_token_stride", i64(t.blocks_token_stride)},
      {"blocks_block_stride", i64(t.blocks_block_stride)},
      {"nblocks", KernelArgument::integer(ScalarType::kI32, build_.nblocks)},
      {"reset", KernelArgument::integer(ScalarType::kI32, build_.reset ? 1 : 0)},
      {"mlp_res_norm", pointer(t.mlp_res_norm, ScalarType::kBf16)},
      {"mlp_res_proj", pointer(t.mlp_res_proj, ScalarType::kBf16)},
      {"post_norm", pointer(t.post_norm, ScalarType::kBf16)},
      {"w_gate", pointer(t.w_gate, ScalarType::kBf16)},
      {"gate_bias", pointer(t.gate_bias, ScalarType::kF32)},
      {"w_ld", pointer(t.w_ld, ScalarType::kBf16)},
      {"w_gu", pointer(t.w_gu, ScalarType::kBf16)},
      {"w_sd", pointer(t.w_sd, ScalarType::kBf16)},
      {"w13", pointer(t.w13, ScalarType::kU8)},
      {"w13_scale", pointer(t.w13_scale, ScalarType::kU8)},
      {"w2", pointer(t.w2, ScalarType::kU8)},
      {"w2_scale", pointer(t.w2_scale, ScalarType::kU8)},
      {"latent_norm", pointer(t.latent_norm, ScalarType::kBf16)},
      {"w_up", pointer(t.w_up, ScalarType::kBf16)},
      {"out", pointer(t.out, ScalarType::kBf16)},
      {"route_experts", pointer(t.route_experts, ScalarType::kI32)},
      {"route_weights", pointer(t.route_weights, ScalarType::kF32)},
      {"a_rows", pointer(scratch + s.a_rows, ScalarType::kBf16)},
      {"y_rows", pointer(scratch + s.y_rows, ScalarType::kBf16)},
      {"ares", pointer(scratch + s.ares, ScalarType::kF32)},
      {"logits", pointer(scratch + s.logits, ScalarType::kF32)},
      {"lat", pointer(scratch + s.lat, ScalarType::kBf16)},
      {"latent_sum", pointer(scratch + s.latent_sum, ScalarType::kBf16)},
      {"normed", pointer(scratch + s.normed, ScalarType::kBf16)},
      {"act", pointer(scratch + s.act, ScalarType::kBf16)},
      {"shared", pointer(scratch + s.shared, ScalarType::kBf16)},
      {"sorted", pointer(scratch + s.sorted, ScalarType::kI32)},
      {"union_ids", pointer(scratch + s.union_ids, ScalarType::kI32)},
      {"union_count", pointer(scratch + s.union_count, ScalarType::kI32)},
      {"inter", pointer(scratch + s.inter, ScalarType::kBf16)},
      {"flags", pointer(scratch + s.flags, ScalarType::kI32)},
      {"counters", pointer(scratch + s.counters, ScalarType::kI32)},
      {"epoch", pointer(state_->epoch(), ScalarType::kI32)},
      {"slot", KernelArgument::integer(ScalarType::kI32, kK2SlotBase + layer)},
      {"health", pointer(state_->health(), ScalarType::kI32)},
      {"alarm", pointer(state_->alarm(), ScalarType::kI32)},
      {"peer0", pointer(peer(0), ScalarType::kI32)},
      {"peer1", pointer(peer(1), ScalarType::kI32)},
      {"peer2", pointer(peer(2), ScalarType::kI32)},
      {"peer3", pointer(peer(3), ScalarType::kI32)},
      {"peer4", pointer(peer(4), ScalarType::kI32)},
      {"peer5", pointer(peer(5), ScalarType::kI32)},
      {"peer6", pointer(peer(6), ScalarType::kI32)},
      {"peer7", pointer(peer(7), ScalarType::kI32)},
      {"clock", pointer(clock_.address(), ScalarType::kI64)},
  }};
}

LaunchArguments K2Launch::arguments(const K2Tensors& tensors, int layer) const {
  return order_.arrange(table(tensors, layer));
}

absl::Status K2Launch::launch(const Kernel& kernel, const K2Tensors& tensors, int layer,
                              Stream& stream) const {
  if (layer < 0 || layer > 127) {
    return absl::InvalidArgumentError(absl::StrCat(
        "K2 layer ", layer, " is outside 0..127: its tag slot 128 + layer must be below 256"));
  }
  MT_RETURN_IF_ERROR(order_.check(
      kernel, [&] { return absl::StrCat("K2 of build \"", kernels::k3::k2_name(build_), "\""); }));
  MT_RETURN_IF_ERROR(
      pack_arguments_into(packed_, kernel.name(), kernel.params(), arguments(tensors, layer)));
  return kernel.launch(Dim3{static_cast<uint32_t>(programs()), 1, 1}, packed_, stream);
}

std::string k2_region_name(int32_t region) {
  switch (static_cast<K2Region>(region)) {
    case K2Region::kAttnRes:
      return "the MLP AttnRes";
    case K2Region::kDelta:
      return "o_proj's output a";
    case K2Region::kRouterInput:
      return "the router's input y";
    case K2Region::kRouterLogits:
      return "the router's logits";
    case K2Region::kMoe:
      return "the MoE";
    case K2Region::kLatentSum:
      return "the routed latent sum";
    case K2Region::kOProjPeers:
      return "o_proj's partial sums";
    case K2Region::kLatentPeers:
      return "the routed latent's partial sums";
    case K2Region::kFinalPeers:
      return "the MoE output's partial sums";
  }
  return "";
}

absl::Status K2Launch::check_health() const {
  return state_->check_health(
      absl::StrCat("K2 \"", kernels::k3::k2_name(build_), "\""), build_.wait_ns, k2_region_name,
      [](int32_t region) { return region >= static_cast<int32_t>(K2Region::kOProjPeers); });
}

}  // namespace monotile::runtime
