// `monotile demo`: the devices and compilers found, a few registered DSL kernels compiled for sm_90a
// and gfx90a through the kernel cache (hit/miss, resource reports), and, on each GPU found, the DSL
// copy kernel compiled for that GPU, launched and checked. Exits 0 on a machine without a GPU.
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "jit/jit.h"
#include "jit/program_build.h"
#include "kernels/bench/bench_kernels.h"
#include "kernels/registry.h"
#include "runtime/discovery.h"
#include "runtime/kernel.h"
#include "support/status_macros.h"
#include "tools/build_report.h"
#include "tools/commands.h"

namespace monotile::tools {
namespace {

// The registered kernels the demo compiles: small and quick, one of each kind of row kernel.
constexpr const char* kDemoKernels[] = {"rmsnorm_rows4_h7168", "softmax_rows8192_cols4096"};

// Compiles the DSL copy kernel for `device`, copies 4 MiB with it and compares every word.
absl::Status run_copy(runtime::Device& device, jit::Jit& jit) {
  constexpr int64_t kBytes = int64_t{4} << 20;
  const kernels::bench::BenchKernel kernel = kernels::bench::copy_kernel(kBytes);
  MT_ASSIGN_OR_RETURN(jit::ProgramBuild made,
                      jit::make_build(kernel.program, device.info().target));
  MT_ASSIGN_OR_RETURN(jit::CompiledBuild compiled, jit.compile_build(made.build));
  MT_ASSIGN_OR_RETURN(runtime::Kernel loaded, runtime::Kernel::load(device, compiled, made.params));
  std::vector<int32_t> source(kBytes / 4), copied(kBytes / 4, -1);
  for (size_t i = 0; i < source.size(); ++i) source[i] = static_cast<int32_t>(i * 2654435761u);
  MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer from, device.allocate(kBytes));
  MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer to, device.allocate(kBytes));
  MT_RETURN_IF_ERROR(device.copy_to_device(from.address(), source.data(), kBytes));
  MT_RETURN_IF_ERROR(device.fill_bytes(to.address(), 0xff, kBytes));  // -1 until written
  MT_ASSIGN_OR_RETURN(runtime::Stream stream, device.create_stream());
  const runtime::KernelArgument args[] = {
      runtime::KernelArgument::pointer(reinterpret_cast<const void*>(from.address()),
                                       dsl::ScalarType::kI32),
      runtime::KernelArgument::pointer(reinterpret_cast<const void*>(to.address()),
                                       dsl::ScalarType::kI32)};
  const runtime::Dim3 grid{static_cast<uint32_t>(kernel.grid[0]),
                           static_cast<uint32_t>(kernel.grid[1]),
                           static_cast<uint32_t>(kernel.grid[2])};
  MT_RETURN_IF_ERROR(loaded.launch(grid, args, stream));
  MT_RETURN_IF_ERROR(device.synchronize(stream));
  MT_RETURN_IF_ERROR(device.copy_to_host(copied.data(), to.address(), kBytes));
  size_t wrong = 0;
  for (size_t i = 0; i < source.size(); ++i) wrong += copied[i] != source[i];
  if (wrong > 0) {
    return absl::InternalError(
        absl::StrCat(compiled.name, " gave ", wrong, " wrong words of ", source.size()));
  }
  std::printf("  %s: %s (%s, %s) copied %lld bytes, all correct\n",
              runtime::describe(device.info()).c_str(), compiled.name.c_str(),
              compiled.target.c_str(), compiled.hit ? "cache hit" : "compiled",
              static_cast<long long>(kBytes));
  return absl::OkStatus();
}

}  // namespace

int demo_command(Args args) {
  if (!args.empty()) {
    std::fprintf(stderr,
                 "usage: monotile demo (no arguments; MONOTILE_CACHE_DIR picks the cache)\n");
    return 2;
  }
  runtime::DiscoveryOptions discovery_options;
  discovery_options.include_cpu = false;
  runtime::Discovery discovery = runtime::discover_devices(discovery_options);
  std::printf("devices:\n");
  for (const auto& device : discovery.devices) std::printf("  %s\n", runtime::describe(device->info()).c_str());
  for (const runtime::MissingBackend& missing : discovery.missing) {
    std::printf("  no %s GPU: %s\n", std::string(dsl::vendor_name(missing.vendor)).c_str(), missing.reason.c_str());
  }
  for (const std::string& skipped : discovery.skipped) std::printf("  %s\n", skipped.c_str());

  jit::Jit jit(jit::JitConfig::from_environment());
  std::printf("\ncompilers:\n");
  std::vector<dsl::Target> demo_targets;
  for (const char* text : {"sm_90a", "gfx90a", "gfx942"}) {
    dsl::Target target = *dsl::Target::parse(text);
    absl::StatusOr<jit::Compiler*> compiler = jit.compiler(target);
    if (!compiler.ok()) {
      std::printf("  %-8s unavailable: %s\n", text, std::string(compiler.status().message()).c_str());
      continue;
    }
    std::printf("  %-8s %s\n", text, (*compiler)->identity().c_str());
    if (target.arch() != "gfx942") demo_targets.push_back(target);
  }
  std::vector<jit::Build> builds;
  const std::vector<std::string> names(std::begin(kDemoKernels), std::end(kDemoKernels));
  for (const dsl::Target& target : demo_targets) {
    absl::StatusOr<std::vector<jit::Build>> found = kernels::registry_builds(target, names);
    if (!found.ok()) {
      std::printf("  %s: %s\n", target.str().c_str(), std::string(found.status().message()).c_str());
      continue;
    }
    builds.insert(builds.end(), found->begin(), found->end());
  }
  std::printf("\nregistered kernels through the cache in %s (monotile compile --list names them all):\n",
              jit.config().cache.writable_dir.string().c_str());
  std::fflush(stdout);
  jit::CompileAllResult result = compile_with_progress(jit, builds, 0, stderr);
  print_build_table(stdout, builds, result);

  std::printf("\nrunning:\n");
  bool ran_ok = true;
  if (discovery.devices.empty()) std::printf("  no GPU here: nothing to run\n");
  for (const auto& device : discovery.devices) {
    absl::Status status = run_copy(*device, jit);
    if (!status.ok()) {
      std::printf("  %s: %s\n", runtime::describe(device->info()).c_str(), std::string(status.message()).c_str());
      ran_ok = false;
    }
  }
  return result.ok() && ran_ok ? 0 : 1;
}

}  // namespace monotile::tools
