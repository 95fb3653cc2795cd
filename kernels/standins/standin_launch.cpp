// Loading and launching stand-in programs; see standin_launch.h.
#include "kernels/standins/standin_launch.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jit/compile_all.h"
#include "jit/program_build.h"
#include "runtime/launch_state.h"
#include "support/status_macros.h"

namespace monotile::kernels::standins {

absl::StatusOr<runtime::DevicePtr> weight_address(const WeightAddresses& weights, int layer,
                                                  std::string_view name) {
  auto found = weights.find(name);
  if (found == weights.end()) {
    return absl::NotFoundError(
        absl::StrCat("layer ", layer, " stand-in: no weight \"", std::string(name), "\""));
  }
  return found->second;
}

absl::Status precompile(runtime::Device& device, jit::Jit& jit,
                        std::span<const dsl::Program> programs) {
  if (device.info().vendor == dsl::Vendor::kCpu) return absl::OkStatus();
  std::vector<jit::Build> builds;
  for (const dsl::Program& program : programs) {
    MT_ASSIGN_OR_RETURN(jit::ProgramBuild made, jit::make_build(program, device.info().target));
    builds.push_back(std::move(made.build));
  }
  const jit::CompileAllResult result = jit::compile_all(jit, builds);
  std::vector<std::string> failures;
  for (size_t i = 0; i < builds.size(); ++i) {
    if (!result.results[i].ok())
      failures.push_back(std::string(result.results[i].status().message()));
  }
  if (failures.empty()) return absl::OkStatus();
  return absl::InternalError(
      absl::StrCat("the host stand-ins' kernels did not compile: ", absl::StrJoin(failures, "; ")));
}

absl::StatusOr<StandinKernel> StandinKernel::load(runtime::Device& device, jit::Jit& jit,
                                                  PlannedKernel planned) {
  MT_ASSIGN_OR_RETURN(runtime::Kernel kernel,
                      runtime::load_program(device, std::move(planned.program), jit));
  return StandinKernel{std::move(kernel), planned.grid};
}

absl::Status StandinKernel::launch(std::span<const runtime::KernelArgument> args,
                                   runtime::Stream& stream) const {
  const runtime::Dim3 dims{static_cast<uint32_t>(grid.x), static_cast<uint32_t>(grid.y),
                           static_cast<uint32_t>(grid.z)};
  return kernel.launch(dims, args, stream);
}

runtime::KernelArgument pointer_argument(runtime::DevicePtr address, dsl::ScalarType pointee) {
  return runtime::KernelArgument::pointer(reinterpret_cast<const void*>(address), pointee);
}
runtime::KernelArgument bf16_argument(runtime::DevicePtr address) {
  return pointer_argument(address, dsl::ScalarType::kBf16);
}
runtime::KernelArgument i32_argument(runtime::DevicePtr address) {
  return pointer_argument(address, dsl::ScalarType::kI32);
}
runtime::KernelArgument i64_scalar(int64_t value) {
  return runtime::KernelArgument::integer(dsl::ScalarType::kI64, value);
}

}  // namespace monotile::kernels::standins
