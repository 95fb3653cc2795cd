// `monotile demo`: the devices and compilers found, the sample kernels compiled for sm_90a and
// gfx90a through the kernel cache (hit/miss, resource reports), and, on each GPU found, the vector
// add sample compiled for that GPU, launched and checked. Exits 0 on a machine without a GPU.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "jit/jit.h"
#include "kernels/registry.h"
#include "kernels/samples/samples.h"
#include "runtime/discovery.h"
#include "support/status_macros.h"
#include "tools/build_report.h"
#include "tools/commands.h"

namespace monotile::tools {
namespace {

// Compiles the vector add sample for `device`, runs it on 1M elements and compares every element.
absl::Status run_vector_add(runtime::Device& device, jit::Jit& jit) {
  MT_ASSIGN_OR_RETURN(jit::CompiledBuild compiled, jit.compile_build(kernels::samples::vector_add(device.info().target)));
  MT_ASSIGN_OR_RETURN(runtime::Module module, device.load_module(compiled.code_object, compiled.name));
  MT_ASSIGN_OR_RETURN(runtime::Function function, device.function(module, compiled.kernel_name));
  constexpr int kCount = 1 << 20;
  constexpr size_t kBytes = sizeof(float) * kCount;
  std::vector<float> a(kCount), b(kCount), c(kCount, std::nanf(""));
  for (int i = 0; i < kCount; ++i) {
    a[i] = 0.5f * static_cast<float>(i % 1000);
    b[i] = 1.0f - static_cast<float>(i % 77);
  }
  MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer a_buffer, device.allocate(kBytes));
  MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer b_buffer, device.allocate(kBytes));
  MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer c_buffer, device.allocate(kBytes));
  MT_RETURN_IF_ERROR(device.copy_to_device(a_buffer.address(), a.data(), kBytes));
  MT_RETURN_IF_ERROR(device.copy_to_device(b_buffer.address(), b.data(), kBytes));
  MT_RETURN_IF_ERROR(device.fill_bytes(c_buffer.address(), 0xff, kBytes));  // NaN until written
  MT_ASSIGN_OR_RETURN(runtime::Stream stream, device.create_stream());
  uint64_t a_address = a_buffer.address(), b_address = b_buffer.address(), c_address = c_buffer.address();
  int count = kCount;
  void* args[] = {&a_address, &b_address, &c_address, &count};
  runtime::LaunchConfig config;
  config.block.x = static_cast<uint32_t>(compiled.launch.block_x);
  config.grid.x = static_cast<uint32_t>((kCount + compiled.launch.block_x - 1) / compiled.launch.block_x);
  MT_RETURN_IF_ERROR(device.launch(function, config, args, stream));
  MT_RETURN_IF_ERROR(device.synchronize(stream));
  MT_RETURN_IF_ERROR(device.copy_to_host(c.data(), c_buffer.address(), kBytes));
  int wrong = 0;
  for (int i = 0; i < kCount; ++i) wrong += c[i] != a[i] + b[i];
  if (wrong > 0) {
    return absl::InternalError(absl::StrCat("vector_add gave ", wrong, " wrong elements of ", kCount));
  }
  std::printf("  %s: vector_add (%s, %s) ran on %d elements, all correct\n", runtime::describe(device.info()).c_str(),
              compiled.target.c_str(), compiled.hit ? "cache hit" : "compiled", kCount);
  return absl::OkStatus();
}

}  // namespace

int demo_command(Args args) {
  if (!args.empty()) {
    std::fprintf(stderr, "usage: monotile demo (no arguments; MONOTILE_CACHE_DIR picks the cache)\n");
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
  for (const dsl::Target& target : demo_targets) {
    absl::StatusOr<std::vector<jit::Build>> found = kernels::registry_builds(target);
    if (found.ok()) builds.insert(builds.end(), found->begin(), found->end());
  }
  std::printf("\nsample kernels through the cache in %s:\n", jit.config().cache.writable_dir.string().c_str());
  std::fflush(stdout);
  jit::CompileAllResult result = compile_with_progress(jit, builds, 0, stderr);
  print_build_table(stdout, builds, result);

  std::printf("\nrunning:\n");
  bool ran_ok = true;
  if (discovery.devices.empty()) std::printf("  no GPU here: nothing to run\n");
  for (const auto& device : discovery.devices) {
    absl::Status status = run_vector_add(*device, jit);
    if (!status.ok()) {
      std::printf("  %s: %s\n", runtime::describe(device->info()).c_str(), std::string(status.message()).c_str());
      ran_ok = false;
    }
  }
  return result.ok() && ran_ok ? 0 : 1;
}

}  // namespace monotile::tools
