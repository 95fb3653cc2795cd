// Kernel: a compiled build loaded on a Device and ready to launch. Every launch checks its arguments
// against the program's signature (count, pointer or scalar, dtype, integer range) and fails with a
// Status naming the kernel and the parameter instead of faulting; a launch never synchronizes, so it
// can be recorded by graph capture.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dsl/interp/interpreter.h"
#include "dsl/lower/lower.h"
#include "jit/build.h"
#include "runtime/device.h"

namespace monotile::runtime {

using KernelArgument = dsl::interp::ArgValue;

// The most arguments a launch takes without allocating on the host (K2, the largest, has 43).
inline constexpr size_t kInlineArguments = 64;
using LaunchArguments = absl::InlinedVector<KernelArgument, kInlineArguments>;

// Arguments in the driver's kernelParams form: pointers()[i] points at argument i's bytes, laid out
// as the generated signature declares it (pointers 8 bytes, bool 1, f16/bf16 as 16-bit patterns
// rounded to nearest even, integers in their width). Up to kInlineArguments, it lives in the object
// itself (no allocation), so a move re-points the views at the moved bytes.
class PackedArguments {
 public:
  PackedArguments() = default;
  PackedArguments(PackedArguments&& other) noexcept { *this = std::move(other); }
  PackedArguments& operator=(PackedArguments&& other) noexcept;
  PackedArguments(const PackedArguments&) = delete;
  PackedArguments& operator=(const PackedArguments&) = delete;

  void** pointers() { return pointers_.data(); }
  size_t size() const { return pointers_.size(); }
  // Argument i's bytes (its declared size).
  std::span<const std::byte> bytes(size_t i) const;

 private:
  friend absl::Status pack_arguments_into(PackedArguments&, std::string_view, std::span<const dsl::lower::KernelParam>,
                                          std::span<const KernelArgument>);
  void point_at_slots();
  absl::InlinedVector<uint64_t, kInlineArguments> slots_;  // one 8-byte slot per argument: enough for every type
  absl::InlinedVector<int, kInlineArguments> sizes_;
  absl::InlinedVector<void*, kInlineArguments> pointers_;
};

// Checks `args` against `params` and packs them. InvalidArgument, naming `kernel_name`, when the
// count differs, an argument's type (pointer vs scalar, dtype) differs from its parameter's, or an
// integer value does not fit its parameter's type.
absl::StatusOr<PackedArguments> pack_arguments(std::string_view kernel_name,
                                               std::span<const dsl::lower::KernelParam> params,
                                               std::span<const KernelArgument> args);
// The same into `packed`, reusing its storage: a binding that launches often keeps one
// PackedArguments and packs each launch's values into it, allocating nothing (up to
// kInlineArguments arguments; the message of a refusal is the only allocation). On a refusal
// `packed` is left empty.
absl::Status pack_arguments_into(PackedArguments& packed, std::string_view kernel_name,
                                 std::span<const dsl::lower::KernelParam> params,
                                 std::span<const KernelArgument> args);

class Kernel {
 public:
  // Loads `build`'s code object on `device`, finds its entry and, when the build needs dynamic
  // shared memory, raises the function's limit to it. `params` is the signature make_build returned.
  static absl::StatusOr<Kernel> load(Device& device, const jit::CompiledBuild& build,
                                     std::vector<dsl::lower::KernelParam> params);

  // Enqueues one launch over `grid` on `stream` with the build's block and dynamic shared memory.
  // Errors: the argument checks of pack_arguments, an empty grid, or the driver's launch error.
  absl::Status launch(const Dim3& grid, std::span<const KernelArgument> args, Stream& stream) const;
  // The same with arguments packed for this kernel (pack_arguments_into with params()): the driver
  // copies their values when the launch is enqueued, so `packed` may be packed again on return.
  absl::Status launch(const Dim3& grid, PackedArguments& packed, Stream& stream) const;

  const std::string& name() const { return name_; }
  const std::vector<dsl::lower::KernelParam>& params() const { return params_; }
  // The launch shape without the grid (block and dynamic shared memory).
  LaunchConfig config(const Dim3& grid) const;

 private:
  Kernel() = default;
  Device* device_ = nullptr;
  Module module_;
  Function function_;
  std::string name_;
  jit::LaunchInfo launch_;
  std::vector<dsl::lower::KernelParam> params_;
};

}  // namespace monotile::runtime
