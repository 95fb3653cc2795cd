// Where conformance cases run: an explicit device memory model (allocate, copy in, launch, copy
// out) so that the same cases run on the CPU interpreter and, through the JIT and a runtime
// device, on a GPU. Buffers are opaque device addresses; the executor owns and frees them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dsl/interp/interpreter.h"
#include "dsl/ir.h"

namespace monotile::conformance {

using dsl::interp::LaunchGrid;

// A device allocation: its address on the device (a host address for the interpreter).
struct DeviceBuffer {
  uint64_t address = 0;
  size_t bytes = 0;
};

// A kernel argument: a buffer (plus a byte offset into it) or a scalar of `type`.
struct KernelArg {
  static KernelArg buffer(DeviceBuffer buffer, dsl::ScalarType pointee, size_t byte_offset = 0) {
    return {true, {pointee, true}, buffer, byte_offset, 0, 0};
  }
  static KernelArg integer(dsl::ScalarType type, int64_t value) { return {false, {type, false}, {}, 0, value, 0}; }
  static KernelArg floating(dsl::ScalarType type, double value) { return {false, {type, false}, {}, 0, 0, value}; }

  bool is_buffer = false;
  dsl::ElementType type;
  DeviceBuffer device_buffer;
  size_t byte_offset = 0;
  int64_t int_value = 0;
  double float_value = 0;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;

  // A buffer of `bytes` (contents unspecified) named for error messages; aligned to 256 bytes.
  virtual absl::StatusOr<DeviceBuffer> allocate(size_t bytes, std::string_view name) = 0;
  virtual absl::Status copy_in(DeviceBuffer buffer, std::span<const std::byte> host) = 0;
  virtual absl::Status copy_out(std::span<std::byte> host, DeviceBuffer buffer) = 0;
  // Runs `program` over `grid` and waits for it to finish.
  virtual absl::Status launch(const dsl::Program& program, const LaunchGrid& grid,
                              std::span<const KernelArg> args) = 0;
  // Frees every buffer allocated so far (between cases).
  virtual void release_all() = 0;
};

}  // namespace monotile::conformance
