// gpu_copy_bench: the HBM floor every kernel benchmark is compared with, measured in the same run:
// device-to-device copy bandwidth through the driver's memcpy and through a 16-byte-vector copy
// kernel compiled by the JIT, counting bytes read plus bytes written. Prints one line per method
// and size (median and best of the timed runs). Without an NVIDIA GPU it says why and exits 0.
// usage: gpu_copy_bench [--iterations N] [--mib SIZE]...
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "jit/compiler.h"
#include "runtime/device_cuda.h"
#include "tests/gpu/copy_kernel_cuda.h"

namespace monotile {
namespace {

struct Timing {
  float median_ms = 0;
  float best_ms = 0;
};

// Runs `enqueue` `iterations` times after two warm-ups, each bracketed by events on `stream`.
absl::StatusOr<Timing> time_runs(runtime::Device& device, runtime::Stream& stream, int iterations,
                                 const std::function<absl::Status()>& enqueue) {
  for (int i = 0; i < 2; ++i) {
    absl::Status status = enqueue();
    if (!status.ok()) return status;
  }
  std::vector<float> times;
  for (int i = 0; i < iterations; ++i) {
    absl::StatusOr<runtime::Event> start = device.create_event();
    absl::StatusOr<runtime::Event> end = device.create_event();
    if (!start.ok()) return start.status();
    if (!end.ok()) return end.status();
    absl::Status status = device.record(*start, stream);
    if (status.ok()) status = enqueue();
    if (status.ok()) status = device.record(*end, stream);
    if (status.ok()) status = device.synchronize(*end);
    if (!status.ok()) return status;
    absl::StatusOr<float> elapsed = device.elapsed_ms(*start, *end);
    if (!elapsed.ok()) return elapsed.status();
    times.push_back(*elapsed);
  }
  std::sort(times.begin(), times.end());
  return Timing{times[times.size() / 2], times.front()};
}

void print(std::string_view method, uint64_t bytes, const Timing& timing) {
  const double moved = 2.0 * static_cast<double>(bytes);  // read + write
  std::printf("%-22.*s %8.1f MiB  median %8.3f ms %8.1f GB/s   best %8.3f ms %8.1f GB/s\n",
              static_cast<int>(method.size()), method.data(), bytes / (1024.0 * 1024.0),
              timing.median_ms, moved / (timing.median_ms * 1e6), timing.best_ms,
              moved / (timing.best_ms * 1e6));
}

int fail(const absl::Status& status, std::string_view what) {
  std::fprintf(stderr, "gpu_copy_bench: %.*s: %s\n", static_cast<int>(what.size()), what.data(),
               std::string(status.message()).c_str());
  return 1;
}

int run(int argc, char** argv) {
  int iterations = 20;
  std::vector<uint64_t> sizes_mib;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if ((arg == "--iterations" || arg == "--mib") && i + 1 < argc) {
      const long value = std::strtol(argv[++i], nullptr, 10);
      if (value <= 0) {
        std::fprintf(stderr, "gpu_copy_bench: %s needs a positive number, got \"%s\"\n",
                     arg.data(), argv[i]);
        return 2;
      }
      if (arg == "--iterations") iterations = static_cast<int>(value);
      else sizes_mib.push_back(static_cast<uint64_t>(value));
    } else {
      std::fprintf(stderr, "usage: gpu_copy_bench [--iterations N] [--mib SIZE]...\n");
      return 2;
    }
  }
  if (sizes_mib.empty()) sizes_mib = {64, 1024};

  absl::StatusOr<runtime::BackendDevices> found = runtime::open_cuda_devices();
  if (!found.ok() || found->devices.empty()) {
    std::printf("gpu_copy_bench: skipped, no NVIDIA GPU: %s\n",
                found.ok() ? "no usable device" : std::string(found.status().message()).c_str());
    return 0;
  }
  runtime::Device& device = *found->devices[0];
  const runtime::DeviceInfo& info = device.info();
  std::printf("device: %s (%s), %d SMs, %.1f GiB, %s\n", info.name.c_str(),
              info.target.str().c_str(), info.compute_units,
              info.memory_bytes / (1024.0 * 1024.0 * 1024.0), info.driver.c_str());

  absl::StatusOr<std::unique_ptr<jit::Compiler>> compiler = jit::make_compiler(info.target);
  if (!compiler.ok()) return fail(compiler.status(), "making the compiler");
  jit::CompileRequest request{.kernel_name = "copy16",
                              .source = kCopyKernel,
                              .target = info.target,
                              .options = {},
                              .headers = {},
                              .build_name = "gpu_copy_bench copy16",
                              .build_key = {}};
  absl::StatusOr<jit::CompileResult> compiled = (*compiler)->compile(request);
  if (!compiled.ok()) return fail(compiled.status(), "compiling copy16");
  absl::StatusOr<runtime::Module> module = device.load_module(compiled->code_object, "copy16");
  if (!module.ok()) return fail(module.status(), "loading copy16");
  absl::StatusOr<runtime::Function> copy16 = device.function(*module, "copy16");
  if (!copy16.ok()) return fail(copy16.status(), "looking up copy16");
  absl::StatusOr<runtime::Stream> stream = device.create_stream();
  if (!stream.ok()) return fail(stream.status(), "creating a stream");

  for (uint64_t mib : sizes_mib) {
    const uint64_t bytes = mib << 20;
    absl::StatusOr<runtime::DeviceBuffer> source = device.allocate(bytes);
    absl::StatusOr<runtime::DeviceBuffer> destination = device.allocate(bytes);
    if (!source.ok()) return fail(source.status(), "allocating");
    if (!destination.ok()) return fail(destination.status(), "allocating");
    absl::Status filled = device.fill_bytes(source->address(), 0x3C, bytes);
    if (!filled.ok()) return fail(filled, "filling");

    absl::StatusOr<Timing> memcpy_timing = time_runs(device, *stream, iterations, [&] {
      return device.copy_on_device_async(destination->address(), source->address(), bytes, *stream);
    });
    if (!memcpy_timing.ok()) return fail(memcpy_timing.status(), "timing the driver memcpy");
    print("driver memcpy DtoD", bytes, *memcpy_timing);

    runtime::DevicePtr from = source->address(), to = destination->address();
    unsigned long long count = bytes / 16;
    void* args[] = {&from, &to, &count};
    const runtime::LaunchConfig config{
        {static_cast<uint32_t>(info.compute_units) * 4, 1, 1}, {512, 1, 1}, 0};
    absl::StatusOr<Timing> kernel_timing = time_runs(device, *stream, iterations, [&] {
      return device.launch(*copy16, config, args, *stream);
    });
    if (!kernel_timing.ok()) return fail(kernel_timing.status(), "timing copy16");
    print("copy kernel (16 B/lane)", bytes, *kernel_timing);
  }
  return 0;
}

}  // namespace
}  // namespace monotile

int main(int argc, char** argv) { return monotile::run(argc, argv); }
