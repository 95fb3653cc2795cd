// The conformance executor backed by the CPU interpreter: buffers are host allocations, and every
// launch passes them all as the interpreter's valid memory, so an out-of-bounds lane is an error.
#pragma once

#include <memory>
#include <vector>

#include "tests/conformance/executor.h"

namespace monotile::conformance {

class InterpreterExecutor final : public Executor {
 public:
  std::string name() const override { return "interpreter"; }
  absl::StatusOr<DeviceBuffer> allocate(size_t bytes, std::string_view name) override;
  absl::Status copy_in(DeviceBuffer buffer, std::span<const std::byte> host) override;
  absl::Status copy_out(std::span<std::byte> host, DeviceBuffer buffer) override;
  absl::Status launch(const dsl::Program& program, const LaunchGrid& grid, std::span<const KernelArg> args) override;
  void release_all() override;

 private:
  struct Storage {
    std::unique_ptr<std::byte[]> bytes;
    dsl::interp::Allocation allocation;
  };
  std::byte* host_of(DeviceBuffer buffer);
  std::vector<Storage> storage_;
};

}  // namespace monotile::conformance
