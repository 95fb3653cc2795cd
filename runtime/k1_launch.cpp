// K1's binding; see k1_launch.h. Its table names every argument; the build's parameters (k1_parameters)
// are resolved against it once, in create, so a renamed parameter is caught there, and a launch
// places the values by position without allocating.
#include "runtime/k1_launch.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status_macros.h"

namespace monotile::runtime {

using dsl::ScalarType;
using kernels::k3::K1Build;

int k1_programs(const DeviceInfo& device, const K1Build& build) {
  const int wanted = device.vendor == dsl::Vendor::kCpu ? 8 : device.compute_units;
  return std::max(wanted, build.tokens);
}

absl::StatusOr<Kernel> load_k1(Device& device, const K1Build& build, jit::Jit& jit) {
  return load_program(device, kernels::k3::k1_program(build), jit);
}

absl::StatusOr<K1Launch> K1Launch::create(Device& device, const K1Build& build, int programs,
                                          const Kernel* kernel) {
  MT_ASSIGN_OR_RETURN(LaunchState state, LaunchState::create(device, programs, "K1"));
  return create(device, build, std::make_shared<LaunchState>(std::move(state)), kernel);
}

absl::StatusOr<K1Launch> K1Launch::create(Device& device, const K1Build& build, std::shared_ptr<LaunchState> state,
                                          const Kernel* kernel, Stream* stream) {
  const int programs = state->programs();
  // The launch values (k1.h): the kernel may have been made from another layer's build of this name.
  if (build.nblocks < 0 || build.nblocks > build.max_blocks || build.write_index < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "K1 of build \"", kernels::k3::k1_name(build), "\": nblocks ", build.nblocks, " and write_index ",
        build.write_index, ", expected nblocks in 0..", build.max_blocks, " (max_blocks) and write_index >= -1; ",
        "hint: take the build from k1_build, which sets max_blocks to the model's block count"));
  }
  K1Launch launch(std::move(state));
  launch.build_ = build;
  launch.layout_ = kernels::k3::k1_scratch(build);
  MT_ASSIGN_OR_RETURN(launch.order_,
                      ParameterOrder::resolve(kernel ? parameter_names(*kernel) : kernels::k3::k1_parameters(build),
                                              launch.table({}, 0),
                                              absl::StrCat("K1 of build \"", kernels::k3::k1_name(build), "\"")));
  MT_ASSIGN_OR_RETURN(launch.scratch_, device.allocate(static_cast<size_t>(launch.layout_.bytes)));
  if (build.stage_clock) {
    MT_ASSIGN_OR_RETURN(launch.clock_, device.allocate(static_cast<size_t>(programs) * kernels::k3::kK1ClockPoints * 8));
    MT_RETURN_IF_ERROR(device.fill_bytes(launch.clock_.address(), 0, launch.clock_.size()));
  }
  MT_RETURN_IF_ERROR(zero_bytes(device, launch.scratch_.address(), static_cast<size_t>(launch.layout_.zeroed_bytes), stream));
  if (kernel != nullptr) {
    // The binding's types against the kernel's signature, once, in the storage launches reuse.
    MT_RETURN_IF_ERROR(pack_arguments_into(launch.packed_, kernel->name(), kernel->params(), launch.arguments({}, 0)));
  }
  return launch;
}

K1Launch::Table K1Launch::table(const K1Tensors& t, int layer) const {
  auto pointer = [](DevicePtr address, ScalarType type) {
    return KernelArgument::pointer(reinterpret_cast<const void*>(address), type);
  };
  auto i64 = [](int64_t value) { return KernelArgument::integer(ScalarType::kI64, value); };
  const DevicePtr scratch = scratch_.address();
  return {{
      {"prefix", pointer(t.prefix, ScalarType::kBf16)},
      {"delta", pointer(t.delta, ScalarType::kBf16)},
      {"blocks", pointer(t.blocks, ScalarType::kBf16)},
      {"blocks_token_stride", i64(t.blocks_token_stride)},
      {"blocks_block_stride", i64(t.blocks_block_stride)},
      {"nblocks", KernelArgument::integer(ScalarType::kI32, build_.nblocks)},
      {"write_index", KernelArgument::integer(ScalarType::kI32, build_.write_index)},
      {"ares_norm", pointer(t.ares_norm, ScalarType::kBf16)},
      {"ares_proj", pointer(t.ares_proj, ScalarType::kBf16)},
      {"in_norm", pointer(t.in_norm, ScalarType::kBf16)},
      {"w_in", pointer(t.w_in, ScalarType::kBf16)},
      {"w_fb", pointer(t.w_fb, ScalarType::kBf16)},
      {"conv_w", pointer(t.conv_w, ScalarType::kF32)},
      {"conv_state", pointer(t.conv_state, ScalarType::kBf16)},
      {"conv_slot_stride", i64(t.conv_slot_stride)},
      {"conv_channel_stride", i64(t.conv_channel_stride)},
      {"conv_entry_stride", i64(t.conv_entry_stride)},
      {"a_log", pointer(t.a_log, ScalarType::kF32)},
      {"dt_bias", pointer(t.dt_bias, ScalarType::kF32)},
      {"o_norm", pointer(t.o_norm, ScalarType::kBf16)},
      {"state", pointer(t.state, ScalarType::kF32)},
      {"state_slot_stride", i64(t.state_slot_stride)},
      {"state_indices", pointer(t.state_indices, ScalarType::kI32)},
      {"state_indices_stride", i64(t.state_indices_stride)},
      {"num_accepted", pointer(t.num_accepted, ScalarType::kI32)},
      {"core", pointer(t.core, ScalarType::kBf16)},
      {"x_rows", pointer(scratch + layout_.x_rows, ScalarType::kBf16)},
      {"proj", pointer(scratch + layout_.proj, ScalarType::kBf16)},
      {"o_rows", pointer(scratch + layout_.o_rows, ScalarType::kF32)},
      {"ares", pointer(scratch + layout_.ares, ScalarType::kF32)},
      {"flags", pointer(scratch + layout_.flags, ScalarType::kI32)},
      {"counters", pointer(scratch + layout_.counters, ScalarType::kI32)},
      {"epoch", pointer(state_->epoch(), ScalarType::kI32)},
      {"layer", KernelArgument::integer(ScalarType::kI32, layer)},
      {"health", pointer(state_->health(), ScalarType::kI32)},
      {"alarm", pointer(state_->alarm(), ScalarType::kI32)},
      {"clock", pointer(clock_.address(), ScalarType::kI64)},
  }};
}

LaunchArguments K1Launch::arguments(const K1Tensors& tensors, int layer) const {
  return order_.arrange(table(tensors, layer));
}

absl::Status K1Launch::launch(const Kernel& kernel, const K1Tensors& tensors, int layer, Stream& stream) const {
  if (layer < 0 || layer > 127) {
    return absl::InvalidArgumentError(absl::StrCat("K1 tag slot (layer) ", layer, " is outside 0..127"));
  }
  MT_RETURN_IF_ERROR(
      order_.check(kernel, [&] { return absl::StrCat("K1 of build \"", kernels::k3::k1_name(build_), "\""); }));
  MT_RETURN_IF_ERROR(pack_arguments_into(packed_, kernel.name(), kernel.params(), arguments(tensors, layer)));
  return kernel.launch(Dim3{static_cast<uint32_t>(programs()), 1, 1}, packed_, stream);
}

std::string k1_region_name(int32_t region) {
  switch (static_cast<kernels::k3::K1Region>(region)) {
    case kernels::k3::K1Region::kAttnRes: return "AttnRes";
    case kernels::k3::K1Region::kXRows: return "x rows";
    case kernels::k3::K1Region::kProj: return "in_proj";
    case kernels::k3::K1Region::kSources: return "the linear in_proj's sources";
    case kernels::k3::K1Region::kMix: return "the linear in_proj's mix";
  }
  return "";
}

absl::Status K1Launch::check_health() const {
  return state_->check_health(absl::StrCat("K1 \"", kernels::k3::k1_name(build_), "\""), build_.wait_ns, k1_region_name);
}

}  // namespace monotile::runtime
