// interpret_on_gpu: validate on the interpreter, then run on the first GPU through the conformance
// suite's GpuExecutor, mapping each host allocation to a device buffer. Without a GPU the calling
// test is marked skipped with discovery's reason.
#include "tests/gpu/tutorial_gpu_adapter.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "support/status_macros.h"
#include "tests/conformance/gpu_executor.h"

namespace monotile::dsl::interp {
namespace {

using conformance::GpuExecutor;

struct GpuState {
  std::unique_ptr<GpuExecutor> executor;
  std::string missing;  // why there is no executor
};

GpuState& gpu() {
  static GpuState* state = [] {
    auto* made = new GpuState;
    absl::StatusOr<std::unique_ptr<GpuExecutor>> executor = GpuExecutor::create();
    if (executor.ok()) {
      made->executor = *std::move(executor);
      std::printf("tutorial programs run on %s\n", made->executor->name().c_str());
    } else {
      made->missing = std::string(executor.status().message());
    }
    return made;
  }();
  return *state;
}

// Marks the running test skipped (GTEST_SKIP returns from this function only).
void skip_test(const std::string& reason) { GTEST_SKIP() << reason; }

}  // namespace

absl::Status interpret_on_gpu(const Program& program, const LaunchGrid& grid, std::span<const ArgValue> args,
                              const InterpretOptions& options) {
  GpuExecutor* executor = gpu().executor.get();
  if (executor == nullptr) {
    // The test is reported skipped; the interpreter's results let the tutorial's checks run on.
    skip_test(gpu().missing);
    return interpret(program, grid, args, options);
  }
  // Inputs as the caller left them; the interpreter's run changes the outputs.
  std::vector<std::vector<std::byte>> inputs;
  for (const Allocation& allocation : options.allocations) {
    const auto* base = static_cast<const std::byte*>(allocation.base);
    inputs.emplace_back(base, base + allocation.bytes);
  }
  MT_RETURN_IF_ERROR(interpret(program, grid, args, options));
  std::vector<conformance::DeviceBuffer> buffers;
  for (size_t i = 0; i < options.allocations.size(); ++i) {
    MT_ASSIGN_OR_RETURN(conformance::DeviceBuffer buffer,
                        executor->allocate(inputs[i].size(), options.allocations[i].name));
    MT_RETURN_IF_ERROR(executor->copy_in(buffer, inputs[i]));
    buffers.push_back(buffer);
  }
  std::vector<conformance::KernelArg> device_args;
  for (const ArgValue& arg : args) {
    if (!arg.type().pointer) {
      device_args.push_back(is_float(arg.type().scalar) ? conformance::KernelArg::floating(arg.type().scalar, arg.float_value())
                                                        : conformance::KernelArg::integer(arg.type().scalar, arg.int_value()));
      continue;
    }
    const auto address = static_cast<uintptr_t>(arg.int_value());
    bool mapped = false;
    for (size_t i = 0; i < options.allocations.size() && !mapped; ++i) {
      const auto base = reinterpret_cast<uintptr_t>(options.allocations[i].base);
      if (address >= base && address <= base + options.allocations[i].bytes) {
        device_args.push_back(conformance::KernelArg::buffer(buffers[i], arg.type().scalar, address - base));
        mapped = true;
      }
    }
    if (!mapped) {
      executor->release_all();
      return absl::InvalidArgumentError(absl::StrFormat(
          "kernel \"%s\": pointer argument 0x%x lies in none of the listed allocations; hint: list every buffer in "
          "InterpretOptions::allocations", program.name, address));
    }
  }
  absl::Status status = executor->launch(program, grid, device_args);
  for (size_t i = 0; i < options.allocations.size() && status.ok(); ++i) {
    auto* base = static_cast<std::byte*>(const_cast<void*>(options.allocations[i].base));
    status = executor->copy_out({base, options.allocations[i].bytes}, buffers[i]);
  }
  executor->release_all();
  return status;
}

}  // namespace monotile::dsl::interp
