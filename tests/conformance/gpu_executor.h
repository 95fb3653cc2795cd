// The conformance executor on a GPU: each program goes through make_build for the device's target,
// the JIT (through its kernel cache) and runtime::Kernel, whose launch checks the arguments; buffers
// are device memory. A program is compiled once per executor (kernels are kept by program hash).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jit/compile_all.h"
#include "jit/jit.h"
#include "runtime/device.h"
#include "runtime/kernel.h"
#include "tests/conformance/executor.h"

namespace monotile::conformance {

class GpuExecutor final : public Executor {
 public:
  // On the first GPU discovery finds (NVIDIA, then AMD). NotFound with discovery's reasons (no
  // driver, no device) when there is none: callers skip with its message.
  static absl::StatusOr<std::unique_ptr<GpuExecutor>> create(jit::Jit& jit = jit::Jit::process_default());
  GpuExecutor(std::unique_ptr<runtime::Device> device, runtime::Stream stream, jit::Jit& jit);
  ~GpuExecutor() override;

  std::string name() const override;
  absl::StatusOr<DeviceBuffer> allocate(size_t bytes, std::string_view name) override;
  absl::Status copy_in(DeviceBuffer buffer, std::span<const std::byte> host) override;
  absl::Status copy_out(std::span<std::byte> host, DeviceBuffer buffer) override;
  absl::Status launch(const dsl::Program& program, const LaunchGrid& grid, std::span<const KernelArg> args) override;
  void release_all() override;

  // Compiles `programs` ahead of their launches on `jobs` threads (0: one per core) into the JIT's
  // cache, so that launches only load. Failures are reported again by the launch that needs them.
  jit::CompileAllResult precompile(std::span<const dsl::Program> programs, int jobs = 0);

  runtime::Device& device() { return *device_; }
  // compile_build calls that compiled (missed the cache), for "a warm executor compiles nothing".
  int compiles() const { return compiles_; }

 private:
  absl::StatusOr<const runtime::Kernel*> kernel_for(const dsl::Program& program);

  std::unique_ptr<runtime::Device> device_;
  runtime::Stream stream_;
  jit::Jit& jit_;
  std::map<uint64_t, runtime::DeviceBuffer> buffers_;  // by address
  std::map<uint64_t, std::unique_ptr<runtime::Kernel>> kernels_;  // by program hash
  int compiles_ = 0;
};

}  // namespace monotile::conformance
