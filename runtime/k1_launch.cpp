// K1's binding; see k1_launch.h. The argument list is built by name and then checked against
// k1_parameters, so a reordered or renamed parameter is caught here rather than on the device.
#include "runtime/k1_launch.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jit/program_build.h"
#include "runtime/interpreter_module.h"
#include "support/check.h"
#include "support/status_macros.h"

namespace monotile::runtime {

using dsl::ScalarType;
using kernels::k3::K1Build;

int k1_programs(const DeviceInfo& device, const K1Build& build) {
  const int wanted = device.vendor == dsl::Vendor::kCpu ? 8 : device.compute_units;
  return std::max(wanted, build.tokens);
}

absl::StatusOr<Kernel> load_k1(Device& device, const K1Build& build, jit::Jit& jit) {
  dsl::Program program = kernels::k3::k1_program(build);
  if (device.info().vendor == dsl::Vendor::kCpu) {
    std::vector<dsl::lower::KernelParam> params;
    for (const dsl::Param& param : program.params) {
      const int size = param.type.pointer ? 8 : dsl::scalar_type_bytes(param.type.scalar);
      params.push_back({param.name, param.type, "", size, size});
    }
    jit::CompiledBuild compiled;
    compiled.name = compiled.kernel_name = program.name;
    compiled.target = "cpu";
    compiled.code_object = ProgramCatalog::process()->add(std::move(program));
    return Kernel::load(device, compiled, std::move(params));
  }
  MT_ASSIGN_OR_RETURN(jit::ProgramBuild made, jit::make_build(program, device.info().target));
  MT_ASSIGN_OR_RETURN(jit::CompiledBuild compiled, jit.compile_build(made.build));
  return Kernel::load(device, compiled, std::move(made.params));
}

absl::StatusOr<K1Launch> K1Launch::create(Device& device, const K1Build& build, int programs) {
  if (programs < 1) return absl::InvalidArgumentError(absl::StrCat("K1 needs at least one program, got ", programs));
  K1Launch launch;
  launch.device_ = &device;
  launch.build_ = build;
  launch.programs_ = programs;
  launch.layout_ = kernels::k3::k1_scratch(build);
  const int64_t health_bytes = kernels::k3::health_words(programs) * 4;
  MT_ASSIGN_OR_RETURN(launch.scratch_, device.allocate(static_cast<size_t>(launch.layout_.bytes)));
  MT_ASSIGN_OR_RETURN(launch.health_, device.allocate(static_cast<size_t>(health_bytes)));
  MT_ASSIGN_OR_RETURN(launch.words_, device.allocate(8));
  if (build.stage_clock) {
    MT_ASSIGN_OR_RETURN(launch.clock_, device.allocate(static_cast<size_t>(programs) * kernels::k3::kK1ClockPoints * 8));
    MT_RETURN_IF_ERROR(device.fill_bytes(launch.clock_.address(), 0, launch.clock_.size()));
  }
  MT_RETURN_IF_ERROR(device.fill_bytes(launch.scratch_.address(), 0, static_cast<size_t>(launch.layout_.zeroed_bytes)));
  MT_RETURN_IF_ERROR(device.fill_bytes(launch.health_.address(), 0, static_cast<size_t>(health_bytes)));
  MT_RETURN_IF_ERROR(device.fill_bytes(launch.words_.address(), 0, 8));
  return launch;
}

std::vector<KernelArgument> K1Launch::arguments(const K1Tensors& t, int layer) const {
  auto pointer = [](DevicePtr address, ScalarType type) {
    return KernelArgument::pointer(reinterpret_cast<const void*>(address), type);
  };
  auto i64 = [](int64_t value) { return KernelArgument::integer(ScalarType::kI64, value); };
  const DevicePtr scratch = scratch_.address();
  std::map<std::string, KernelArgument> by_name = {
      {"prefix", pointer(t.prefix, ScalarType::kBf16)},
      {"delta", pointer(t.delta, ScalarType::kBf16)},
      {"blocks", pointer(t.blocks, ScalarType::kBf16)},
      {"blocks_token_stride", i64(t.blocks_token_stride)},
      {"blocks_block_stride", i64(t.blocks_block_stride)},
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
      {"epoch", pointer(words_.address() + 4, ScalarType::kI32)},
      {"layer", KernelArgument::integer(ScalarType::kI32, layer)},
      {"health", pointer(health_.address(), ScalarType::kI32)},
      {"alarm", pointer(words_.address(), ScalarType::kI32)},
      {"clock", pointer(clock_.address(), ScalarType::kI64)},
  };
  std::vector<KernelArgument> args;
  for (const std::string& name : kernels::k3::k1_parameters(build_)) {
    auto found = by_name.find(name);
    MT_CHECK(found != by_name.end(), "a K1 parameter has no binding in K1Launch::arguments");
    args.push_back(found->second);
  }
  return args;
}

absl::Status K1Launch::set_epoch(int32_t epoch) { return device_->copy_to_device(words_.address() + 4, &epoch, 4); }

absl::Status K1Launch::launch(const Kernel& kernel, const K1Tensors& tensors, int layer, Stream& stream) const {
  if (layer < 0 || layer > 127) {
    return absl::InvalidArgumentError(absl::StrCat("K1 tag slot (layer) ", layer, " is outside 0..127"));
  }
  std::vector<std::string> expected = kernels::k3::k1_parameters(build_), got;
  for (const dsl::lower::KernelParam& param : kernel.params()) got.push_back(param.name);
  if (got != expected) {
    return absl::InvalidArgumentError(absl::StrCat("kernel \"", kernel.name(), "\" is not K1 of build \"",
                                                   kernels::k3::k1_name(build_), "\": parameters (",
                                                   absl::StrJoin(got, ", "), "), expected (",
                                                   absl::StrJoin(expected, ", "), ")"));
  }
  return kernel.launch(Dim3{static_cast<uint32_t>(programs_), 1, 1}, arguments(tensors, layer), stream);
}

absl::StatusOr<std::vector<K1WaitRecord>> K1Launch::failed_waits() const {
  const int64_t words = kernels::k3::health_words(programs_);
  std::vector<int32_t> health(static_cast<size_t>(words));
  MT_RETURN_IF_ERROR(device_->copy_to_host(health.data(), health_.address(), health.size() * 4));
  std::vector<K1WaitRecord> records;
  if (health[0] == 0) return records;
  constexpr int kWords = kernels::k3::kHealthRecordWords;
  for (int p = 0; p < programs_; ++p) {
    const int32_t* record = health.data() + int64_t{p + 1} * kWords;
    if (record[0] == 0) continue;
    records.push_back({record[1], record[2], record[3], record[4], record[5]});
  }
  return records;
}

absl::Status K1Launch::check_health() const {
  MT_ASSIGN_OR_RETURN(std::vector<K1WaitRecord> records, failed_waits());
  int32_t alarm = 0;
  MT_RETURN_IF_ERROR(device_->copy_to_host(&alarm, words_.address(), 4));
  if (records.empty() && alarm == 0) return absl::OkStatus();
  std::vector<std::string> lines;
  for (const K1WaitRecord& r : records) {
    const char* region = r.region == static_cast<int32_t>(kernels::k3::K1Region::kAttnRes) ? "AttnRes"
                         : r.region == static_cast<int32_t>(kernels::k3::K1Region::kXRows) ? "x rows"
                         : r.region == static_cast<int32_t>(kernels::k3::K1Region::kProj) ? "in_proj"
                                                                                           : "unknown region";
    lines.push_back(absl::StrCat("program ", r.program, " waited on ", region, " (region ", r.region, ") flag ",
                                 r.index, ": expected tag ", r.expected, ", saw ", r.seen));
  }
  if (records.empty()) lines.push_back(absl::StrCat("the alarm word is ", alarm, " but no health record is set"));
  return absl::InternalError(absl::StrCat("K1 \"", kernels::k3::k1_name(build_), "\" over ", programs_,
                                          " programs: a hand-off wait gave up after ", build_.wait_ns / 1000000,
                                          " ms: ", absl::StrJoin(lines, "; "),
                                          "; hint: every program must be resident at once (a persistent kernel)"));
}

}  // namespace monotile::runtime
