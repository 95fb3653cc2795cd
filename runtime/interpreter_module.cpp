// The CPU device's interpreter kernels and their catalog; see interpreter_module.h.
#include "runtime/interpreter_module.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dsl/interp/float16.h"
#include "dsl/interp/interpreter.h"
#include "dsl/program_hash.h"
#include "support/strings.h"

namespace monotile::runtime {
namespace {

using dsl::ScalarType;

template <typename T>
T read(const void* value) {
  T result;
  std::memcpy(&result, value, sizeof(T));
  return result;
}

class InterpreterKernel final : public CpuKernel {
 public:
  explicit InterpreterKernel(std::shared_ptr<const dsl::Program> program)
      : program_(std::move(program)) {
    for (const dsl::Param& param : program_->params) {
      sizes_.push_back(param.type.pointer ? sizeof(uint64_t)
                                          : static_cast<size_t>(dsl::scalar_type_bytes(param.type.scalar)));
    }
  }

  std::span<const size_t> parameter_sizes() const override { return sizes_; }

  absl::Status run(const LaunchConfig& config, void** args,
                   std::span<const CpuAllocation> memory) override {
    std::vector<dsl::interp::ArgValue> values;
    values.reserve(program_->params.size());
    for (size_t i = 0; i < program_->params.size(); ++i) {
      absl::StatusOr<dsl::interp::ArgValue> value = argument(program_->params[i], args[i]);
      if (!value.ok()) return value.status();
      values.push_back(*value);
    }
    dsl::interp::InterpretOptions options;
    options.allocations.reserve(memory.size());
    for (const CpuAllocation& allocation : memory) {
      options.allocations.push_back({allocation.base, allocation.bytes, allocation.name});
    }
    const dsl::interp::LaunchGrid grid{static_cast<int>(config.grid.x),
                                       static_cast<int>(config.grid.y),
                                       static_cast<int>(config.grid.z)};
    return dsl::interp::interpret(*program_, grid, values, options);
  }

 private:
  absl::StatusOr<dsl::interp::ArgValue> argument(const dsl::Param& param, const void* value) const {
    using dsl::interp::ArgValue;
    const ScalarType scalar = param.type.scalar;
    if (param.type.pointer) {
      return ArgValue::pointer(reinterpret_cast<const void*>(read<uint64_t>(value)), scalar);
    }
    switch (scalar) {
      case ScalarType::kI1: return ArgValue::integer(scalar, read<uint8_t>(value) != 0);
      case ScalarType::kI8: return ArgValue::integer(scalar, read<int8_t>(value));
      case ScalarType::kU8: return ArgValue::integer(scalar, read<uint8_t>(value));
      case ScalarType::kI16: return ArgValue::integer(scalar, read<int16_t>(value));
      case ScalarType::kI32: return ArgValue::integer(scalar, read<int32_t>(value));
      case ScalarType::kU32: return ArgValue::integer(scalar, read<uint32_t>(value));
      case ScalarType::kI64: return ArgValue::integer(scalar, read<int64_t>(value));
      case ScalarType::kF16:
        return ArgValue::floating(scalar, dsl::interp::f16_bits_to_double(read<uint16_t>(value)));
      case ScalarType::kBf16:
        return ArgValue::floating(scalar, dsl::interp::bf16_bits_to_double(read<uint16_t>(value)));
      case ScalarType::kF32: return ArgValue::floating(scalar, read<float>(value));
      case ScalarType::kF64: return ArgValue::floating(scalar, read<double>(value));
      case ScalarType::kMxfp4: break;
    }
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel \"", program_->name, "\": parameter \"", param.name, "\" of type ",
        to_absl(dsl::scalar_type_name(scalar)), " cannot be passed by value"));
  }

  std::shared_ptr<const dsl::Program> program_;
  std::vector<size_t> sizes_;
};

class InterpreterModule final : public CpuModule {
 public:
  explicit InterpreterModule(std::shared_ptr<const dsl::Program> program)
      : name_(program->name), kernel_(make_interpreter_kernel(std::move(program))) {}

  absl::StatusOr<CpuKernel*> kernel(std::string_view name) override {
    if (name == name_) return kernel_.get();
    return absl::NotFoundError(absl::StrCat("the module's only kernel is \"", name_, "\", not \"",
                                            to_absl(name), "\""));
  }

 private:
  std::string name_;
  std::unique_ptr<CpuKernel> kernel_;
};

}  // namespace

std::string ProgramCatalog::add(dsl::Program program) {
  std::string key = absl::StrFormat("monotile-interp:%016x:%s", dsl::program_hash(program),
                                    program.name);
  absl::MutexLock lock(&mutex_);
  programs_.try_emplace(key, std::make_shared<const dsl::Program>(std::move(program)));
  return key;
}

absl::StatusOr<std::shared_ptr<const dsl::Program>> ProgramCatalog::find(
    std::string_view code_object) const {
  absl::MutexLock lock(&mutex_);
  auto found = programs_.find(code_object);
  if (found != programs_.end()) return found->second;
  return absl::NotFoundError(absl::StrCat(
      "no interpreter program under code object \"", to_absl(code_object.substr(0, 80)),
      "\"; hint: a CPU code object comes from ProgramCatalog::add of the catalog the device loads "
      "from"));
}

const std::shared_ptr<ProgramCatalog>& ProgramCatalog::process() {
  static const auto* catalog = new std::shared_ptr<ProgramCatalog>(std::make_shared<ProgramCatalog>());
  return *catalog;
}

CpuModuleLoader interpreter_loader(std::shared_ptr<const ProgramCatalog> catalog) {
  return [catalog = std::move(catalog)](std::string_view code_object, std::string_view)
             -> absl::StatusOr<std::unique_ptr<CpuModule>> {
    absl::StatusOr<std::shared_ptr<const dsl::Program>> program = catalog->find(code_object);
    if (!program.ok()) return program.status();
    return std::unique_ptr<CpuModule>(std::make_unique<InterpreterModule>(*std::move(program)));
  };
}

std::unique_ptr<CpuKernel> make_interpreter_kernel(std::shared_ptr<const dsl::Program> program) {
  return std::make_unique<InterpreterKernel>(std::move(program));
}

}  // namespace monotile::runtime
