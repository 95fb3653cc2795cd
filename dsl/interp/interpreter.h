// The CPU interpreter: runs a tile Program on host memory, op by op on whole tiles, with exactly
// the semantics of dsl/ir.h. Pointer arguments are host addresses; every access is checked against
// the allocation its pointer argument points into, so an out-of-bounds lane is an error naming the
// op's line, even when it lands in a neighbouring allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "dsl/ir.h"

namespace monotile::dsl::interp {

// Program instances along x, y, z (program_id(0..2)); every count must be >= 1.
struct LaunchGrid {
  int x = 1;
  int y = 1;
  int z = 1;
  int64_t size() const { return int64_t{x} * y * z; }
};

// A range of host memory the program may touch; `name` appears in out-of-bounds messages.
struct Allocation {
  const void* base = nullptr;
  size_t bytes = 0;
  std::string name;
};

// One kernel argument, typed so that the launch can check it against the program's parameter.
// Scalars hold their value (integers as int64, floats as double, exact for every parameter type).
class ArgValue {
 public:
  static ArgValue pointer(const void* address, ScalarType pointee) {
    return ArgValue(ElementType{pointee, true}, static_cast<int64_t>(reinterpret_cast<uintptr_t>(address)), 0);
  }
  static ArgValue integer(ScalarType type, int64_t value) { return ArgValue({type, false}, value, 0); }
  static ArgValue floating(ScalarType type, double value) { return ArgValue({type, false}, 0, value); }

  // Convenience for unambiguous C++ types: float* -> ptr<f32>, int32_t -> i32, double -> f64...
  // (bf16/f16/mxfp4 data has no C++ type: use pointer(address, ScalarType::kBf16)).
  template <typename T>
  static ArgValue of(T value);

  const ElementType& type() const { return type_; }
  int64_t int_value() const { return int_value_; }  // integers, and pointers as addresses
  double float_value() const { return float_value_; }

 private:
  ArgValue(ElementType type, int64_t int_value, double float_value)
      : type_(type), int_value_(int_value), float_value_(float_value) {}
  ElementType type_;
  int64_t int_value_ = 0;
  double float_value_ = 0;
};

// How program instances are scheduled.
enum class Schedule {
  kAuto,        // kThreads when the program contains a wait_until (it waits on other instances), else kSequence
  kSequence,    // instances one after the other in row-major order (x fastest): deterministic
  kThreads,     // one host thread per instance, all running concurrently
};

struct InterpretOptions {
  Schedule schedule = Schedule::kAuto;
  // Memory the program may access. Each pointer argument belongs to the allocation it points into
  // (the innermost one, when a view is listed inside a buffer), and every access through a pointer
  // derived from it must stay inside that allocation. An address cast from an integer must lie
  // inside some allocation.
  std::vector<Allocation> allocations;
  // kPrint output; stdout when null. Each print is written whole (lines of concurrent instances do not mix).
  std::ostream* print_stream = nullptr;
  // Refuse kThreads for grids larger than this (each instance is a host thread).
  int max_threads = 4096;
  // Each wait_until that times out is reported as one line (op, line, instance, the word and its
  // value): appended here when set, else printed as a warning on stderr. A timeout is not an error:
  // the op yields true and the kernel decides.
  std::vector<std::string>* wait_timeouts = nullptr;
};

// Runs `program` over `grid`. Errors (all InvalidArgument unless noted): wrong argument count or
// type; an out-of-bounds or misaligned access (op, source line, instance, lane and address; out of
// bounds also names the buffer, its size and the offset past its end or before its start); a
// failed device_assert (its message and line); a while loop or wait cancelled because another
// instance failed. Plain memory effects of instances that ran before an error remain.
absl::Status interpret(const Program& program, const LaunchGrid& grid, std::span<const ArgValue> args,
                       const InterpretOptions& options);

// Several launches running at once, every instance of every launch on its own thread: ranks that
// exchange data through peer pointers (each launch's arguments may point into the others' buffers).
// `options.allocations` covers every launch's memory; `options.schedule` is ignored.
struct Launch {
  const Program* program = nullptr;
  LaunchGrid grid;
  std::vector<ArgValue> args;
};
absl::Status interpret_concurrently(std::span<const Launch> launches, const InterpretOptions& options);

// For devices that pass kernel parameters as raw storage (as GPU drivers do): the size in bytes
// of each parameter's value (8 for pointers, the scalar's size otherwise), and the typed
// arguments read from `raw`, where raw[i] points at parameter i's value.
std::vector<size_t> parameter_sizes(const Program& program);
std::vector<ArgValue> arguments_from_raw(const Program& program, const void* const* raw);

template <typename T>
ArgValue ArgValue::of(T value) {
  if constexpr (std::is_pointer_v<T>) {
    using Pointee = std::remove_cv_t<std::remove_pointer_t<T>>;
    if constexpr (std::is_same_v<Pointee, float>) return pointer(value, ScalarType::kF32);
    else if constexpr (std::is_same_v<Pointee, double>) return pointer(value, ScalarType::kF64);
    else if constexpr (std::is_same_v<Pointee, int8_t>) return pointer(value, ScalarType::kI8);
    else if constexpr (std::is_same_v<Pointee, uint8_t>) return pointer(value, ScalarType::kU8);
    else if constexpr (std::is_same_v<Pointee, int16_t>) return pointer(value, ScalarType::kI16);
    else if constexpr (std::is_same_v<Pointee, int32_t>) return pointer(value, ScalarType::kI32);
    else if constexpr (std::is_same_v<Pointee, uint32_t>) return pointer(value, ScalarType::kU32);
    else if constexpr (std::is_same_v<Pointee, int64_t>) return pointer(value, ScalarType::kI64);
    else static_assert(sizeof(T) == 0, "no unambiguous pointee type: use ArgValue::pointer(address, type)");
  } else if constexpr (std::is_same_v<T, bool>) {
    return integer(ScalarType::kI1, value ? 1 : 0);
  } else if constexpr (std::is_same_v<T, float>) {
    return floating(ScalarType::kF32, value);
  } else if constexpr (std::is_same_v<T, double>) {
    return floating(ScalarType::kF64, value);
  } else if constexpr (std::is_same_v<T, int8_t>) {
    return integer(ScalarType::kI8, value);
  } else if constexpr (std::is_same_v<T, uint8_t>) {
    return integer(ScalarType::kU8, value);
  } else if constexpr (std::is_same_v<T, int16_t>) {
    return integer(ScalarType::kI16, value);
  } else if constexpr (std::is_same_v<T, int32_t>) {
    return integer(ScalarType::kI32, value);
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    return integer(ScalarType::kU32, value);
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return integer(ScalarType::kI64, value);
  } else {
    static_assert(sizeof(T) == 0, "unsupported argument type");
  }
}

}  // namespace monotile::dsl::interp
