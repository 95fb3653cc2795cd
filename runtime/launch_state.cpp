// The launch state K1's and K2's bindings share; see launch_state.h.
#include "runtime/launch_state.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jit/program_build.h"
#include "kernels/k3/k1.h"
#include "runtime/interpreter_module.h"
#include "support/status_macros.h"

namespace monotile::runtime {

absl::Status zero_bytes(Device& device, DevicePtr address, size_t bytes, Stream* stream) {
  return stream != nullptr ? device.fill_bytes_async(address, 0, bytes, *stream)
                           : device.fill_bytes(address, 0, bytes);
}

absl::StatusOr<Kernel> load_program(Device& device, dsl::Program program, jit::Jit& jit) {
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

absl::StatusOr<LaunchState> LaunchState::create(Device& device, int programs,
                                                std::string_view kernel) {
  if (programs < 1)
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(kernel), " needs at least one program, got ", programs));
  LaunchState state;
  state.device_ = &device;
  state.programs_ = programs;
  const size_t health_bytes = static_cast<size_t>(kernels::k3::health_words(programs) * 4);
  MT_ASSIGN_OR_RETURN(state.health_, device.allocate(health_bytes));
  MT_ASSIGN_OR_RETURN(state.words_, device.allocate(8));
  MT_RETURN_IF_ERROR(device.fill_bytes(state.health_.address(), 0, health_bytes));
  MT_RETURN_IF_ERROR(device.fill_bytes(state.words_.address(), 0, 8));
  return state;
}

absl::Status LaunchState::set_epoch(int32_t epoch) {
  return device_->copy_to_device(this->epoch(), &epoch, 4);
}

absl::StatusOr<int32_t> LaunchState::read_epoch() const {
  int32_t epoch = 0;
  MT_RETURN_IF_ERROR(device_->copy_to_host(&epoch, this->epoch(), 4));
  return epoch;
}

absl::StatusOr<std::vector<WaitRecord>> LaunchState::failed_waits() const {
  std::vector<int32_t> health(static_cast<size_t>(kernels::k3::health_words(programs_)));
  MT_RETURN_IF_ERROR(device_->copy_to_host(health.data(), health_.address(), health.size() * 4));
  std::vector<WaitRecord> records;
  if (health[0] == 0) return records;
  constexpr int kWords = kernels::k3::kHealthRecordWords;
  for (int p = 0; p < programs_; ++p) {
    const int32_t* record = health.data() + int64_t{p + 1} * kWords;
    if (record[0] == 0) continue;
    records.push_back({record[1], record[2], record[3], record[4], record[5]});
  }
  return records;
}

absl::Status LaunchState::check_health(std::string_view who, int64_t wait_ns,
                                       const std::function<std::string(int32_t)>& region_name,
                                       const std::function<bool(int32_t)>& peer_region) const {
  MT_ASSIGN_OR_RETURN(std::vector<WaitRecord> records, failed_waits());
  int32_t alarm = 0;
  MT_RETURN_IF_ERROR(device_->copy_to_host(&alarm, this->alarm(), 4));
  if (records.empty() && alarm == 0) return absl::OkStatus();
  std::vector<std::string> lines;
  bool on_a_peer = false;
  for (const WaitRecord& r : records) {
    std::string region = region_name(r.region);
    if (region.empty()) region = "unknown region";
    // A peer region's index is the TP rank whose share never came.
    const bool peer = peer_region && peer_region(r.region);
    on_a_peer = on_a_peer || peer;
    lines.push_back(absl::StrCat("program ", r.program, " waited on ", region, " (region ",
                                 r.region, ") ", peer ? "from TP rank " : "flag ", r.index,
                                 ": expected tag ", r.expected, ", saw ", r.seen));
  }
  if (records.empty())
    lines.push_back(absl::StrCat("the alarm word is ", alarm, " but no health record is set"));
  return absl::InternalError(absl::StrCat(
      std::string(who), " over ", programs_, " programs: a hand-off wait gave up after ",
      wait_ns / 1000000, " ms: ", absl::StrJoin(lines, "; "),
      on_a_peer ? "; hint: that TP rank stalled, died or runs other steps; every rank must launch "
                  "the same layers in the same order"
                : "; hint: every program must be resident at once (a persistent kernel)"));
}

}  // namespace monotile::runtime
