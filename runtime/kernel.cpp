// Kernel loading and checked launches. The checks mirror the interpreter's, so a launch that the
// interpreter refuses is refused on a GPU with the same meaning, before any driver call.
#include "runtime/kernel.h"

#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dsl/interp/float16.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::runtime {
namespace {

using dsl::ElementType;
using dsl::ScalarType;
using dsl::lower::KernelParam;

std::string type_text(const ElementType& type) { return dsl::Type{type, {}}.str(); }

std::string signature(std::span<const KernelParam> params) {
  std::vector<std::string> parts;
  for (const KernelParam& param : params) parts.push_back(absl::StrCat(param.name, ": ", type_text(param.type)));
  return absl::StrJoin(parts, ", ");
}

// Whether `value` is representable in the integer type `type`.
bool fits(ScalarType type, int64_t value) {
  switch (type) {
    case ScalarType::kI1: return value == 0 || value == 1;
    case ScalarType::kI8: return value >= std::numeric_limits<int8_t>::min() && value <= std::numeric_limits<int8_t>::max();
    case ScalarType::kU8: return value >= 0 && value <= std::numeric_limits<uint8_t>::max();
    case ScalarType::kI16: return value >= std::numeric_limits<int16_t>::min() && value <= std::numeric_limits<int16_t>::max();
    case ScalarType::kI32: return value >= std::numeric_limits<int32_t>::min() && value <= std::numeric_limits<int32_t>::max();
    case ScalarType::kU32: return value >= 0 && value <= std::numeric_limits<uint32_t>::max();
    default: return true;
  }
}

// The argument's bytes as the generated signature declares the parameter (little-endian: the low
// bytes of the slot).
uint64_t encode(const KernelArgument& arg) {
  const ElementType& type = arg.type();
  if (type.pointer) return static_cast<uint64_t>(arg.int_value());
  switch (type.scalar) {
    case ScalarType::kF16: return dsl::interp::f16_bits_from_double(arg.float_value());
    case ScalarType::kBf16: return dsl::interp::bf16_bits_from_double(arg.float_value());
    case ScalarType::kF32: {
      const float value = static_cast<float>(arg.float_value());
      uint32_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      return bits;
    }
    case ScalarType::kF64: {
      const double value = arg.float_value();
      uint64_t bits;
      std::memcpy(&bits, &value, sizeof bits);
      return bits;
    }
    default:
      return static_cast<uint64_t>(arg.int_value());  // two's complement; the slot's low bytes are passed
  }
}

}  // namespace

PackedArguments& PackedArguments::operator=(PackedArguments&& other) noexcept {
  slots_ = std::move(other.slots_);
  sizes_ = std::move(other.sizes_);
  point_at_slots();
  other.slots_.clear();
  other.sizes_.clear();
  other.pointers_.clear();
  return *this;
}

void PackedArguments::point_at_slots() {
  pointers_.clear();
  for (uint64_t& slot : slots_) pointers_.push_back(&slot);
}

std::span<const std::byte> PackedArguments::bytes(size_t i) const {
  return {reinterpret_cast<const std::byte*>(&slots_.at(i)), static_cast<size_t>(sizes_.at(i))};
}

absl::StatusOr<PackedArguments> pack_arguments(std::string_view kernel_name, std::span<const KernelParam> params,
                                               std::span<const KernelArgument> args) {
  PackedArguments packed;
  MT_RETURN_IF_ERROR(pack_arguments_into(packed, kernel_name, params, args));
  return packed;
}

absl::Status pack_arguments_into(PackedArguments& packed, std::string_view kernel_name,
                                 std::span<const KernelParam> params, std::span<const KernelArgument> args) {
  packed.slots_.clear();
  packed.sizes_.clear();
  packed.pointers_.clear();
  if (args.size() != params.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "launch of kernel \"%s\": expected %d arguments (%s), got %d; hint: pass one argument per parameter, in order",
        to_absl(kernel_name), params.size(), signature(params), args.size()));
  }
  packed.slots_.resize(params.size());
  packed.sizes_.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelParam& param = params[i];
    const ElementType& given = args[i].type();
    if (!(given == param.type)) {
      const std::string hint =
          param.type.pointer ? absl::StrCat("a buffer of ", to_absl(dsl::scalar_type_name(param.type.scalar)))
                             : absl::StrCat("a scalar of type ", to_absl(dsl::scalar_type_name(param.type.scalar)));
      return absl::InvalidArgumentError(
          absl::StrFormat("launch of kernel \"%s\": argument %d \"%s\": expected %s, got %s; hint: pass %s",
                          to_absl(kernel_name), i, param.name, type_text(param.type), type_text(given), hint));
    }
    if (!given.pointer && dsl::is_integer(given.scalar) && !fits(given.scalar, args[i].int_value())) {
      return absl::InvalidArgumentError(
          absl::StrFormat("launch of kernel \"%s\": argument %d \"%s\": value %d does not fit %s", to_absl(kernel_name), i,
                          param.name, args[i].int_value(), to_absl(dsl::scalar_type_name(given.scalar))));
    }
    MT_CHECK(param.size >= 1 && param.size <= 8);
    packed.slots_[i] = encode(args[i]);
    packed.sizes_[i] = param.size;
  }
  packed.point_at_slots();
  return absl::OkStatus();
}

absl::StatusOr<Kernel> Kernel::load(Device& device, const jit::CompiledBuild& build, std::vector<KernelParam> params) {
  Kernel kernel;
  kernel.device_ = &device;
  kernel.name_ = build.kernel_name;
  kernel.launch_ = build.launch;
  kernel.params_ = std::move(params);
  MT_ASSIGN_OR_RETURN(kernel.module_, device.load_module(build.code_object, build.name));
  MT_ASSIGN_OR_RETURN(kernel.function_, device.function(kernel.module_, build.kernel_name));
  if (build.launch.dynamic_shared_memory > 0) {
    MT_RETURN_IF_ERROR(device.set_max_dynamic_shared_memory(kernel.function_, build.launch.dynamic_shared_memory));
  }
  return kernel;
}

LaunchConfig Kernel::config(const Dim3& grid) const {
  LaunchConfig config;
  config.grid = grid;
  config.block = {static_cast<uint32_t>(launch_.block_x), static_cast<uint32_t>(launch_.block_y),
                  static_cast<uint32_t>(launch_.block_z)};
  config.shared_memory_bytes = static_cast<uint32_t>(launch_.dynamic_shared_memory);
  config.programmatic_dependency = launch_.programmatic_dependency;
  return config;
}

absl::Status Kernel::launch(const Dim3& grid, std::span<const KernelArgument> args, Stream& stream) const {
  if (grid.count() == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "launch of kernel \"%s\": grid %s has an empty dimension; expected every count >= 1", name_, describe(grid)));
  }
  MT_ASSIGN_OR_RETURN(PackedArguments packed, pack_arguments(name_, params_, args));
  return device_->launch(function_, config(grid), packed.pointers(), stream);
}

absl::Status Kernel::launch(const Dim3& grid, PackedArguments& packed, Stream& stream) const {
  if (grid.count() == 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "launch of kernel \"%s\": grid %s has an empty dimension; expected every count >= 1", name_, describe(grid)));
  }
  if (packed.size() != params_.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "launch of kernel \"%s\": %d arguments packed, expected %d (%s); hint: pack them with this kernel's params()",
        name_, packed.size(), params_.size(), signature(params_)));
  }
  return device_->launch(function_, config(grid), packed.pointers(), stream);
}

}  // namespace monotile::runtime
