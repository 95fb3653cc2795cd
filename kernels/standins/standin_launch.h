// What the stand-ins' launches share: a stand-in program loaded as a Kernel on a device (the
// interpreter's catalog on the CPU device, the JIT on a GPU), launched over its Grid; the weights
// by the rank's parameter name (model::plan_rank's); device scratch of bf16 values.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "dsl/ir.h"
#include "jit/jit.h"
#include "kernels/standins/grid.h"
#include "runtime/device.h"
#include "runtime/kernel.h"

namespace monotile::kernels::standins {

// A layer's weights on the device by per-rank name ("self_attn.o_proj.weight").
using WeightAddresses = std::map<std::string, runtime::DevicePtr, std::less<>>;

// The address of `name`, or NotFound naming the layer and the weight.
absl::StatusOr<runtime::DevicePtr> weight_address(const WeightAddresses& weights, int layer,
                                                  std::string_view name);

// A stand-in program and its grid, before it is loaded.
struct PlannedKernel {
  dsl::Program program;
  Grid grid;
};

// Compiles `programs` for `device`'s target through the JIT's kernel cache, in parallel and once
// each (jit::compile_all), so that the loads after it only read the cache; nothing on the CPU
// device. Fails naming every program that did not compile.
absl::Status precompile(runtime::Device& device, jit::Jit& jit,
                        std::span<const dsl::Program> programs);

// One stand-in program loaded on a device with its grid.
struct StandinKernel {
  runtime::Kernel kernel;
  Grid grid;

  static absl::StatusOr<StandinKernel> load(runtime::Device& device, jit::Jit& jit,
                                            PlannedKernel planned);
  absl::Status launch(std::span<const runtime::KernelArgument> args, runtime::Stream& stream) const;
};

// Argument helpers: a device address as a pointer argument of `pointee`, an i64 scalar.
runtime::KernelArgument pointer_argument(runtime::DevicePtr address, dsl::ScalarType pointee);
runtime::KernelArgument bf16_argument(runtime::DevicePtr address);
runtime::KernelArgument i32_argument(runtime::DevicePtr address);
runtime::KernelArgument i64_scalar(int64_t value);

}  // namespace monotile::kernels::standins
