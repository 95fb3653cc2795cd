// Loading and launching stand-in programs; see standin_launch.h.
#include "kernels/standins/standin_launch.h"

#include "absl/strings/str_cat.h"
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

absl::StatusOr<StandinKernel> StandinKernel::load(runtime::Device& device, jit::Jit& jit,
                                                  dsl::Program program, Grid grid) {
  MT_ASSIGN_OR_RETURN(runtime::Kernel kernel,
                      runtime::load_program(device, std::move(program), jit));
  return StandinKernel{std::move(kernel), grid};
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
