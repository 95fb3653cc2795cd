// Host-memory buffers and interpreter launches for the conformance suite.
#include "tests/conformance/interpreter_executor.h"

#include <cstring>
#include <new>

#include "absl/strings/str_format.h"

namespace monotile::conformance {

absl::StatusOr<DeviceBuffer> InterpreterExecutor::allocate(size_t bytes, std::string_view name) {
  // Over-allocate to align the start to 256 bytes like device allocations; only `bytes` are valid.
  Storage storage;
  storage.bytes.reset(new std::byte[bytes + 256]);
  const auto raw = reinterpret_cast<uintptr_t>(storage.bytes.get());
  const uintptr_t aligned = (raw + 255) & ~uintptr_t{255};
  storage.allocation = {reinterpret_cast<const void*>(aligned), bytes, std::string(name)};
  storage_.push_back(std::move(storage));
  return DeviceBuffer{static_cast<uint64_t>(aligned), bytes};
}

std::byte* InterpreterExecutor::host_of(DeviceBuffer buffer) {
  return reinterpret_cast<std::byte*>(static_cast<uintptr_t>(buffer.address));
}

absl::Status InterpreterExecutor::copy_in(DeviceBuffer buffer, std::span<const std::byte> host) {
  if (host.size() > buffer.bytes) {
    return absl::InvalidArgumentError(absl::StrFormat("copy_in of %d bytes into a buffer of %d", host.size(), buffer.bytes));
  }
  std::memcpy(host_of(buffer), host.data(), host.size());
  return absl::OkStatus();
}

absl::Status InterpreterExecutor::copy_out(std::span<std::byte> host, DeviceBuffer buffer) {
  if (host.size() > buffer.bytes) {
    return absl::InvalidArgumentError(absl::StrFormat("copy_out of %d bytes from a buffer of %d", host.size(), buffer.bytes));
  }
  std::memcpy(host.data(), host_of(buffer), host.size());
  return absl::OkStatus();
}

absl::Status InterpreterExecutor::launch(const dsl::Program& program, const LaunchGrid& grid,
                                         std::span<const KernelArg> args) {
  std::vector<dsl::interp::ArgValue> values;
  for (const KernelArg& arg : args) {
    if (arg.is_buffer) {
      values.push_back(dsl::interp::ArgValue::pointer(
          reinterpret_cast<const void*>(static_cast<uintptr_t>(arg.device_buffer.address + arg.byte_offset)),
          arg.type.scalar));
    } else if (dsl::is_float(arg.type.scalar)) {
      values.push_back(dsl::interp::ArgValue::floating(arg.type.scalar, arg.float_value));
    } else {
      values.push_back(dsl::interp::ArgValue::integer(arg.type.scalar, arg.int_value));
    }
  }
  dsl::interp::InterpretOptions options;
  for (const Storage& storage : storage_) options.allocations.push_back(storage.allocation);
  return dsl::interp::interpret(program, grid, values, options);
}

void InterpreterExecutor::release_all() { storage_.clear(); }

}  // namespace monotile::conformance
