// Device buffers, JIT-compiled kernels and checked launches for the conformance suite on a GPU.
#include "tests/conformance/gpu_executor.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dsl/program_hash.h"
#include "jit/program_build.h"
#include "runtime/discovery.h"
#include "support/status_macros.h"
#include "support/strings.h"

namespace monotile::conformance {

absl::StatusOr<std::unique_ptr<GpuExecutor>> GpuExecutor::create(jit::Jit& jit) {
  runtime::DiscoveryOptions options;
  options.include_cpu = false;
  runtime::Discovery found = runtime::discover_devices(options);
  if (found.devices.empty()) return absl::NotFoundError(runtime::no_gpu_reason(found));
  std::unique_ptr<runtime::Device> device = std::move(found.devices.front());
  MT_ASSIGN_OR_RETURN(runtime::Stream stream, device->create_stream());
  return std::make_unique<GpuExecutor>(std::move(device), std::move(stream), jit);
}

GpuExecutor::GpuExecutor(std::unique_ptr<runtime::Device> device, runtime::Stream stream, jit::Jit& jit)
    : device_(std::move(device)), stream_(std::move(stream)), jit_(jit) {}

GpuExecutor::~GpuExecutor() {
  // Handles go back to the device before it is destroyed.
  (void)device_->synchronize(stream_);
  buffers_.clear();
  kernels_.clear();
  stream_.reset();
}

std::string GpuExecutor::name() const { return runtime::describe(device_->info()); }

absl::StatusOr<DeviceBuffer> GpuExecutor::allocate(size_t bytes, std::string_view name) {
  absl::StatusOr<runtime::DeviceBuffer> buffer = device_->allocate(bytes == 0 ? 1 : bytes);
  if (!buffer.ok()) return with_context(buffer.status(), absl::StrCat("buffer \"", to_absl(name), "\""));
  const uint64_t address = buffer->address();
  if (address % 256 != 0) {
    return absl::InternalError(absl::StrFormat("buffer \"%s\": the device returned address 0x%x, not 256-byte aligned",
                                               to_absl(name), address));
  }
  buffers_.emplace(address, *std::move(buffer));
  return DeviceBuffer{address, bytes};
}

absl::Status GpuExecutor::copy_in(DeviceBuffer buffer, std::span<const std::byte> host) {
  if (host.size() > buffer.bytes) {
    return absl::InvalidArgumentError(absl::StrFormat("copy_in of %d bytes into a buffer of %d", host.size(), buffer.bytes));
  }
  if (host.empty()) return absl::OkStatus();
  return device_->copy_to_device(buffer.address, host.data(), host.size());
}

absl::Status GpuExecutor::copy_out(std::span<std::byte> host, DeviceBuffer buffer) {
  if (host.size() > buffer.bytes) {
    return absl::InvalidArgumentError(absl::StrFormat("copy_out of %d bytes from a buffer of %d", host.size(), buffer.bytes));
  }
  if (host.empty()) return absl::OkStatus();
  return device_->copy_to_host(host.data(), buffer.address, host.size());
}

jit::CompileAllResult GpuExecutor::precompile(std::span<const dsl::Program> programs, int jobs) {
  std::vector<jit::Build> builds;
  for (const dsl::Program& program : programs) {
    absl::StatusOr<jit::ProgramBuild> build = jit::make_build(program, device_->info().target);
    if (build.ok()) builds.push_back(std::move(build->build));
  }
  return jit::compile_all(jit_, builds, {.jobs = jobs, .on_progress = nullptr});
}

absl::StatusOr<const runtime::Kernel*> GpuExecutor::kernel_for(const dsl::Program& program) {
  const uint64_t hash = dsl::program_hash(program);
  if (auto found = kernels_.find(hash); found != kernels_.end()) return found->second.get();
  MT_ASSIGN_OR_RETURN(jit::ProgramBuild build, jit::make_build(program, device_->info().target));
  MT_ASSIGN_OR_RETURN(jit::CompiledBuild compiled, jit_.compile_build(build.build));
  if (!compiled.hit) ++compiles_;
  MT_ASSIGN_OR_RETURN(runtime::Kernel kernel, runtime::Kernel::load(*device_, compiled, std::move(build.params)));
  auto& slot = kernels_[hash];
  slot = std::make_unique<runtime::Kernel>(std::move(kernel));
  return slot.get();
}

absl::Status GpuExecutor::launch(const dsl::Program& program, const LaunchGrid& grid, std::span<const KernelArg> args) {
  MT_ASSIGN_OR_RETURN(const runtime::Kernel* kernel, kernel_for(program));
  std::vector<runtime::KernelArgument> values;
  for (const KernelArg& arg : args) {
    if (arg.is_buffer) {
      const uint64_t address = arg.device_buffer.address + arg.byte_offset;
      values.push_back(runtime::KernelArgument::pointer(reinterpret_cast<const void*>(address), arg.type.scalar));
    } else if (dsl::is_float(arg.type.scalar)) {
      values.push_back(runtime::KernelArgument::floating(arg.type.scalar, arg.float_value));
    } else {
      values.push_back(runtime::KernelArgument::integer(arg.type.scalar, arg.int_value));
    }
  }
  if (grid.x < 1 || grid.y < 1 || grid.z < 1) {
    return absl::InvalidArgumentError(absl::StrFormat("kernel \"%s\": grid (%d, %d, %d) has an empty dimension",
                                                      program.name, grid.x, grid.y, grid.z));
  }
  const runtime::Dim3 dims{static_cast<uint32_t>(grid.x), static_cast<uint32_t>(grid.y), static_cast<uint32_t>(grid.z)};
  MT_RETURN_IF_ERROR(kernel->launch(dims, values, stream_));
  return device_->synchronize(stream_);
}

void GpuExecutor::release_all() {
  (void)device_->synchronize(stream_);
  buffers_.clear();
}

}  // namespace monotile::conformance
