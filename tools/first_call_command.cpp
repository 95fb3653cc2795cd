// `monotile first-call NAME`: the JIT row of the side-by-side benchmark. Times, in this fresh process,
// one benchmark kernel from its DSL program to its first result on the GPU: lower, key, cache lookup
// (and on a miss NVRTC), load, launch, synchronize. Run it twice on one empty cache folder: the first
// run is the cold compile, the second the warm-cache load, which must compile nothing (it says so).
// Device set-up and the argument buffers come before the clock, as the harness does for Triton.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "jit/jit.h"
#include "jit/program_build.h"
#include "kernels/registry.h"
#include "runtime/device_cuda.h"
#include "runtime/kernel.h"
#include "tools/command_flags.h"
#include "tools/commands.h"
#include "tools/shared_flags.h"

ABSL_FLAG(std::vector<std::string>, arg, {}, "a scalar argument's value, NAME=VALUE (repeatable)");
ABSL_FLAG(std::optional<uint64_t>, buffer_bytes, std::nullopt, "bytes of the buffer behind each pointer argument");

namespace monotile::tools {
namespace {

constexpr const char* kUsage =
    "usage: monotile first-call NAME [--cache-dir DIR] [--arg NAME=VALUE]... [--buffer-bytes N]\n"
    "  NAME            a benchmark kernel (monotile export's names)\n"
    "  --cache-dir     the kernel cache folder (default MONOTILE_CACHE_DIR or ~/.cache/monotile)\n"
    "  --arg           a scalar argument's value (default: 0 for integers, 1e-6 for floats)\n"
    "  --buffer-bytes  bytes of the buffer behind each pointer argument (default 1 GiB + 64 MiB,\n"
    "                  more than any benchmark kernel reads; floats filled with 0x3C bytes, integers 0)\n"
    "prints one JSON line: the milliseconds of each phase and of the whole first call, and the cache\n"
    "counters of this process (a warm call has compiled 0)\n";

constexpr uint64_t kDefaultBufferBytes = (uint64_t{1} << 30) + (uint64_t{64} << 20);

int misuse(const std::string& message) {
  std::fprintf(stderr, "monotile first-call: %s\n%s", message.c_str(), kUsage);
  return 2;
}

int failure(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "monotile first-call: %s: %s\n", what.c_str(), std::string(status.message()).c_str());
  return 1;
}

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

}  // namespace

int first_call_command(Args args) {
  const ParsedArgs parsed = parse_command_flags(
      {.command = "monotile first-call", .file = __FILE__, .shared = {"cache_dir"}, .usage = kUsage}, args);
  if (parsed.exit_status) return *parsed.exit_status;
  if (parsed.positional.size() > 1) {
    return misuse("one kernel name expected, got \"" + parsed.positional[0] + "\" and \"" + parsed.positional[1] + "\"");
  }
  const std::string name = parsed.positional.empty() ? "" : parsed.positional[0];
  const std::string cache_dir = absl::GetFlag(FLAGS_cache_dir);
  std::map<std::string, std::string> scalar_values;
  for (const std::string& value : absl::GetFlag(FLAGS_arg)) {
    const size_t equals = value.find('=');
    if (equals == std::string::npos || equals == 0) return misuse("--arg \"" + value + "\" is not NAME=VALUE");
    scalar_values[value.substr(0, equals)] = value.substr(equals + 1);
  }
  const uint64_t buffer_bytes = absl::GetFlag(FLAGS_buffer_bytes).value_or(kDefaultBufferBytes);
  if (buffer_bytes == 0) return misuse("--buffer-bytes \"0\" is not a positive number of bytes");
  if (name.empty()) return misuse("no kernel name");

  // The program is built before the clock (every registered program is listed once; building one
  // takes 0.02-0.5 ms, docs/perf.md, DSL front end). Only benchmark kernels carry a launch grid.
  absl::StatusOr<const kernels::RegistryEntry*> entry = kernels::find_kernel(name);
  if (!entry.ok()) return misuse(std::string(entry.status().message()));
  if ((*entry)->family != kernels::KernelFamily::kBench) {
    return misuse(absl::StrCat("\"", name,
                               "\" is not a benchmark kernel: it has no launch grid to time it with; hint: "
                               "monotile compile --list shows the benchmark kernels with their grids"));
  }
  const kernels::RegistryEntry* kernel = *entry;

  absl::StatusOr<runtime::BackendDevices> found = runtime::open_cuda_devices();
  if (!found.ok()) return failure("no NVIDIA GPU", found.status());
  if (found->devices.empty()) {
    return failure("no NVIDIA GPU", absl::NotFoundError(absl::StrJoin(found->skipped, "; ")));
  }
  runtime::Device& device = *found->devices[0];
  const dsl::Target target = device.info().target;
  absl::StatusOr<runtime::Stream> stream = device.create_stream();
  if (!stream.ok()) return failure("creating a stream", stream.status());
  const dsl::Program program = kernel->program(target);

  // Arguments, in the program's parameter order.
  std::vector<runtime::DeviceBuffer> buffers;
  std::vector<runtime::KernelArgument> arguments;
  for (const dsl::Param& param : program.params) {
    if (param.type.pointer) {
      absl::StatusOr<runtime::DeviceBuffer> buffer = device.allocate(buffer_bytes);
      if (!buffer.ok()) return failure("allocating \"" + param.name + "\"", buffer.status());
      const uint8_t fill = dsl::is_float(param.type.scalar) ? 0x3C : 0x00;
      if (absl::Status status = device.fill_bytes(buffer->address(), fill, buffer_bytes); !status.ok()) {
        return failure("filling \"" + param.name + "\"", status);
      }
      arguments.push_back(runtime::KernelArgument::pointer(reinterpret_cast<const void*>(buffer->address()),
                                                           param.type.scalar));
      buffers.push_back(std::move(*buffer));
      continue;
    }
    auto given = scalar_values.find(param.name);
    if (dsl::is_float(param.type.scalar)) {
      double value = 1e-6;
      if (given != scalar_values.end() && !absl::SimpleAtod(given->second, &value)) {
        return misuse("--arg " + param.name + "=\"" + given->second + "\" is not a number");
      }
      arguments.push_back(runtime::KernelArgument::floating(param.type.scalar, value));
    } else {
      int64_t value = 0;
      if (given != scalar_values.end() && !absl::SimpleAtoi(given->second, &value)) {
        return misuse("--arg " + param.name + "=\"" + given->second + "\" is not an integer");
      }
      arguments.push_back(runtime::KernelArgument::integer(param.type.scalar, value));
    }
    if (given != scalar_values.end()) scalar_values.erase(given);
  }
  if (!scalar_values.empty()) {
    return misuse("--arg names no scalar parameter of \"" + name + "\": \"" + scalar_values.begin()->first + "\"");
  }
  if (absl::Status status = device.synchronize(); !status.ok()) return failure("setting up", status);

  jit::JitConfig config = jit::JitConfig::from_environment();
  if (!cache_dir.empty()) config.cache.writable_dir = cache_dir;
  jit::Jit jit(config);

  // The clock: everything from here to the synchronize is the first call.
  const Clock::time_point start = Clock::now();
  absl::StatusOr<jit::ProgramBuild> made = jit::make_build(program, target, kernel->options(target));
  if (!made.ok()) return failure("lowering \"" + name + "\"", made.status());
  const double lower_ms = ms_since(start);
  Clock::time_point phase = Clock::now();
  absl::StatusOr<jit::CompiledBuild> compiled = jit.compile_build(made->build);
  if (!compiled.ok()) return failure("compiling \"" + name + "\"", compiled.status());
  const double compile_ms = ms_since(phase);
  phase = Clock::now();
  absl::StatusOr<runtime::Kernel> loaded = runtime::Kernel::load(device, *compiled, made->params);
  if (!loaded.ok()) return failure("loading \"" + name + "\"", loaded.status());
  const double load_ms = ms_since(phase);
  phase = Clock::now();
  const runtime::Dim3 grid{static_cast<uint32_t>(kernel->grid[0]), static_cast<uint32_t>(kernel->grid[1]),
                           static_cast<uint32_t>(kernel->grid[2])};
  if (absl::Status status = loaded->launch(grid, arguments, *stream); !status.ok()) {
    return failure("launching \"" + name + "\"", status);
  }
  if (absl::Status status = device.synchronize(*stream); !status.ok()) {
    return failure("running \"" + name + "\"", status);
  }
  const double launch_ms = ms_since(phase);
  const double total_ms = ms_since(start);

  const cache::Stats stats = jit.cache().process_stats();
  std::printf(
      "{\"kernel\": \"%s\", \"target\": \"%s\", \"first_call_ms\": %.3f, \"lower_ms\": %.3f, "
      "\"compile_ms\": %.3f, \"load_ms\": %.3f, \"launch_ms\": %.3f, \"cache_hit\": %s, "
      "\"compiled\": %d, \"cache_hits\": %llu, \"cache_misses\": %llu, \"cache_stores\": %llu}\n",
      name.c_str(), target.str().c_str(), total_ms, lower_ms, compile_ms, load_ms, launch_ms,
      compiled->hit ? "true" : "false", compiled->hit ? 0 : 1, static_cast<unsigned long long>(stats.hits),
      static_cast<unsigned long long>(stats.misses), static_cast<unsigned long long>(stats.stores));
  return 0;
}

}  // namespace monotile::tools
