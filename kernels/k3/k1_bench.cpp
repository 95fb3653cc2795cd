// k1_bench: K1's time at the K3 TP 8 rank's shapes against its HBM floor, measured in the same run.
// The floor is the bytes K1 must move (every weight once, the caches read and written, the
// activations in and out) at the device-to-device copy bandwidth (bytes read + written) of a 1 GiB
// copy timed here. Each launch runs with a fresh step epoch (its flags must not be satisfied by
// the previous launch's) after a 256 MiB memset that pushes K1's inputs out of L2. Prints, per
// shape: bytes, median and best time, the floor's time, and the ratio. Without a GPU it says why
// and exits 0.
// usage: k1_bench [--iterations N] [--stages]
// --stages: before each timed shape, three launches of its stage_clock build print when stages A,
// B and C end (the latest and the median program).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "jit/jit.h"
#include "jit/program_build.h"
#include "kernels/k3/k1.h"
#include "model/config.h"
#include "runtime/discovery.h"
#include "runtime/kernel.h"
#include "support/status_macros.h"

namespace monotile::kernels::k3 {
namespace {

constexpr int64_t kFlushBytes = int64_t{256} << 20;
constexpr int64_t kCopyBytes = int64_t{1} << 30;
constexpr int kSlotsPerRequest = 8;
constexpr int kClockPoints = kK1ClockPoints;

struct Timing {
  double median_ms = 0, best_ms = 0;
};

Timing summarize(std::vector<float> times) {
  std::sort(times.begin(), times.end());
  return {times[times.size() / 2], times.front()};
}

// The bytes K1 must move at this build (k1.h's parameters), scratch traffic excluded.
int64_t must_move(const K1Build& b) {
  const int64_t t = b.tokens, h = b.hidden, pl = b.projection(), n = b.requests();
  int64_t bytes = int64_t{b.in_proj_rows} * h * 2 + pl * 128 * 2 + 3 * pl * 4 * 4 + 3 * h * 2 + 2 * pl * 4;
  bytes += t * h * 2 * (b.delta ? 3 : 1);         // prefix read (delta: delta read, prefix written)
  bytes += t * int64_t{b.nblocks} * h * 2;        // block sources
  if (b.write_index >= 0) bytes += t * h * 2;     // the block written
  bytes += n * 3 * pl * (3 + b.q + 2) * 2;        // conv window read, q + 2 entries written
  bytes += n * int64_t{b.heads} * 128 * 128 * 4 * (1 + b.q);  // state read once, written per token
  bytes += t * pl * 2;                            // core
  return bytes;
}

absl::StatusOr<Timing> copy_floor(runtime::Device& device, runtime::Stream& stream, int iterations) {
  MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer from, device.allocate(kCopyBytes));
  MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer to, device.allocate(kCopyBytes));
  std::vector<float> times;
  for (int i = 0; i < iterations + 2; ++i) {
    MT_ASSIGN_OR_RETURN(runtime::Event start, device.create_event());
    MT_ASSIGN_OR_RETURN(runtime::Event end, device.create_event());
    MT_RETURN_IF_ERROR(device.record(start, stream));
    MT_RETURN_IF_ERROR(device.copy_on_device_async(to.address(), from.address(), kCopyBytes, stream));
    MT_RETURN_IF_ERROR(device.record(end, stream));
    MT_RETURN_IF_ERROR(device.synchronize(end));
    MT_ASSIGN_OR_RETURN(float ms, device.elapsed_ms(start, end));
    if (i >= 2) times.push_back(ms);
  }
  return summarize(times);
}

absl::StatusOr<Timing> time_k1(runtime::Device& device, runtime::Stream& stream, const K1Build& build,
                               int iterations) {
  const dsl::Target& target = device.info().target;
  MT_ASSIGN_OR_RETURN(jit::ProgramBuild made, jit::make_build(k1_program(build), target));
  MT_ASSIGN_OR_RETURN(jit::CompiledBuild compiled, jit::Jit::process_default().compile_build(made.build));
  MT_ASSIGN_OR_RETURN(runtime::Kernel kernel, runtime::Kernel::load(device, compiled, std::move(made.params)));

  // Buffers (contents: zero bytes, except the step's slots; K1's time does not depend on values).
  const int64_t t = build.tokens, h = build.hidden, pl = build.projection(), n = build.requests();
  const int64_t slots = 1 + n * kSlotsPerRequest, blocks = 8;
  std::vector<runtime::DeviceBuffer> keep;
  auto buffer = [&](int64_t bytes) -> absl::StatusOr<uint64_t> {
    MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer b, device.allocate(std::max<int64_t>(bytes, 256)));
    MT_RETURN_IF_ERROR(device.fill_bytes(b.address(), 0, std::max<int64_t>(bytes, 256)));
    const uint64_t address = b.address();
    keep.push_back(std::move(b));
    return address;
  };
  std::vector<runtime::KernelArgument> args;
  auto pointer = [&](int64_t bytes, dsl::ScalarType type) -> absl::StatusOr<uint64_t> {
    MT_ASSIGN_OR_RETURN(uint64_t address, buffer(bytes));
    args.push_back(runtime::KernelArgument::pointer(reinterpret_cast<const void*>(address), type));
    return address;
  };
  auto integer = [&](dsl::ScalarType type, int64_t value) { args.push_back(runtime::KernelArgument::integer(type, value)); };
  using dsl::ScalarType;
  MT_RETURN_IF_ERROR(pointer(t * h * 2, ScalarType::kBf16).status());
  if (build.delta) MT_RETURN_IF_ERROR(pointer(t * h * 2, ScalarType::kBf16).status());
  MT_RETURN_IF_ERROR(pointer(t * blocks * h * 2, ScalarType::kBf16).status());
  integer(ScalarType::kI64, blocks * h);
  integer(ScalarType::kI64, h);
  for (int i = 0; i < 3; ++i) MT_RETURN_IF_ERROR(pointer(h * 2, ScalarType::kBf16).status());
  MT_RETURN_IF_ERROR(pointer(int64_t{build.in_proj_rows} * h * 2, ScalarType::kBf16).status());
  MT_RETURN_IF_ERROR(pointer(pl * 128 * 2, ScalarType::kBf16).status());
  MT_RETURN_IF_ERROR(pointer(3 * pl * 4 * 4, ScalarType::kF32).status());
  MT_RETURN_IF_ERROR(pointer(slots * build.state_len * 3 * pl * 2, ScalarType::kBf16).status());
  integer(ScalarType::kI64, build.state_len * 3 * pl);
  integer(ScalarType::kI64, 1);
  integer(ScalarType::kI64, 3 * pl);
  MT_RETURN_IF_ERROR(pointer(build.heads * 4, ScalarType::kF32).status());
  MT_RETURN_IF_ERROR(pointer(pl * 4, ScalarType::kF32).status());
  MT_RETURN_IF_ERROR(pointer(128 * 2, ScalarType::kBf16).status());
  MT_RETURN_IF_ERROR(pointer(slots * build.heads * 128 * 128 * 4, ScalarType::kF32).status());
  integer(ScalarType::kI64, int64_t{build.heads} * 128 * 128);
  std::vector<int32_t> indices, accepted;
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < build.q; ++i) indices.push_back(1 + r * kSlotsPerRequest + i);
    accepted.push_back(build.q);
  }
  MT_ASSIGN_OR_RETURN(uint64_t index_address, pointer(indices.size() * 4, ScalarType::kI32));
  MT_RETURN_IF_ERROR(device.copy_to_device(index_address, indices.data(), indices.size() * 4));
  integer(ScalarType::kI64, build.q);
  MT_ASSIGN_OR_RETURN(uint64_t accepted_address, pointer(accepted.size() * 4, ScalarType::kI32));
  MT_RETURN_IF_ERROR(device.copy_to_device(accepted_address, accepted.data(), accepted.size() * 4));
  MT_RETURN_IF_ERROR(pointer(t * pl * 2, ScalarType::kBf16).status());
  const K1Scratch layout = k1_scratch(build);
  MT_ASSIGN_OR_RETURN(uint64_t scratch, buffer(layout.bytes));
  for (auto [offset, type] : {std::pair{layout.x_rows, ScalarType::kBf16}, std::pair{layout.proj, ScalarType::kBf16},
                              std::pair{layout.o_rows, ScalarType::kF32}, std::pair{layout.ares, ScalarType::kF32},
                              std::pair{layout.flags, ScalarType::kI32},
                              std::pair{layout.counters, ScalarType::kI32}}) {
    args.push_back(runtime::KernelArgument::pointer(reinterpret_cast<const void*>(scratch + offset), type));
  }
  MT_ASSIGN_OR_RETURN(uint64_t epoch, pointer(4, ScalarType::kI32));
  integer(ScalarType::kI32, 1);
  const int programs = device.info().compute_units;
  MT_ASSIGN_OR_RETURN(uint64_t health, pointer(health_words(programs) * 4, ScalarType::kI32));
  MT_RETURN_IF_ERROR(pointer(4, ScalarType::kI32).status());
  std::optional<uint64_t> clock;
  if (build.stage_clock) {
    MT_ASSIGN_OR_RETURN(uint64_t address, pointer(int64_t{programs} * kClockPoints * 8, ScalarType::kI64));
    clock = address;
  }
  MT_ASSIGN_OR_RETURN(uint64_t flush, buffer(kFlushBytes));

  std::vector<float> times;
  for (int i = 0; i < iterations + 2; ++i) {
    // A fresh epoch (bytes 1..255 repeated: distinct tags) and a cold L2.
    MT_RETURN_IF_ERROR(device.fill_bytes_async(epoch, static_cast<uint8_t>(1 + i % 255), 4, stream));
    MT_RETURN_IF_ERROR(device.fill_bytes_async(flush, static_cast<uint8_t>(i), kFlushBytes, stream));
    MT_ASSIGN_OR_RETURN(runtime::Event start, device.create_event());
    MT_ASSIGN_OR_RETURN(runtime::Event end, device.create_event());
    MT_RETURN_IF_ERROR(device.record(start, stream));
    MT_RETURN_IF_ERROR(kernel.launch({static_cast<uint32_t>(programs), 1, 1}, args, stream));
    MT_RETURN_IF_ERROR(device.record(end, stream));
    MT_RETURN_IF_ERROR(device.synchronize(end));
    MT_ASSIGN_OR_RETURN(float ms, device.elapsed_ms(start, end));
    if (i >= 2) times.push_back(ms);
  }
  int32_t failed = 0;
  MT_RETURN_IF_ERROR(device.copy_to_host(&failed, health, 4));
  if (failed != 0) return absl::InternalError(k1_name(build) + ": a hand-off wait gave up (health word 0 set)");
  if (clock) {
    // The last launch's stage ends, relative to the earliest program start: the latest program's
    // and the median program's, per stage.
    std::vector<int64_t> ticks(static_cast<size_t>(programs) * kClockPoints);
    MT_RETURN_IF_ERROR(device.copy_to_host(ticks.data(), *clock, ticks.size() * 8));
    int64_t first = ticks[0];
    for (int p = 0; p < programs; ++p) first = std::min(first, ticks[p * kClockPoints]);
    std::printf("  stages of %s (us from the first start; latest / median program; KDA points of the programs that ran a task):\n   ",
                k1_name(build).c_str());
    static const char* names[kClockPoints] = {"start", "A", "B", "C", "kda-inputs", "kda-recurrence", "kda-task"};
    for (int point = 0; point < kClockPoints; ++point) {
      std::vector<int64_t> at;
      for (int p = 0; p < programs; ++p) {
        const int64_t tick = ticks[p * kClockPoints + point];
        if (tick != 0) at.push_back(tick - first);
      }
      if (at.empty()) continue;
      std::sort(at.begin(), at.end());
      std::printf(" %s %.2f / %.2f", names[point], at.back() / 1e3, at[at.size() / 2] / 1e3);
    }
    std::printf("\n");
  }
  return summarize(times);
}

int run(int iterations, bool stages) {
  runtime::DiscoveryOptions options;
  options.include_cpu = false;
  runtime::Discovery found = runtime::discover_devices(options);
  if (found.devices.empty()) {
    std::printf("k1_bench: no GPU%s%s\n", found.missing.empty() ? "" : ": ",
                found.missing.empty() ? "" : found.missing.front().reason.c_str());
    return 0;
  }
  runtime::Device& device = *found.devices.front();
  absl::StatusOr<runtime::Stream> stream = device.create_stream();
  if (!stream.ok()) {
    std::fprintf(stderr, "k1_bench: %s\n", stream.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<Timing> floor = copy_floor(device, *stream, iterations);
  if (!floor.ok()) {
    std::fprintf(stderr, "k1_bench: copy floor: %s\n", floor.status().ToString().c_str());
    return 1;
  }
  const double bandwidth = 2.0 * kCopyBytes / (floor->best_ms * 1e-3);  // bytes read + written per second
  std::printf("k1_bench on %s, %d programs; copy floor: %.1f GB/s (1 GiB D2D copy, best of %d)\n",
              device.info().name.c_str(), device.info().compute_units, bandwidth / 1e9, iterations);
  std::printf("%-52s %10s %10s %10s %10s %7s\n", "build (K3 TP8 rank 0, layer 1, delta)", "MB", "median us",
              "best us", "floor us", "ratio");
  model::ModelConfig config = *model::load_config("k3");
  model::RankDims dims = *model::rank_dims(config, 8, 0);
  int status = 0;
  for (int q : {4, 2}) {
    for (int n : {1, 2, 4}) {
      absl::StatusOr<K1Build> build = k1_build(config, 1, dims.kda_heads, static_cast<int>(dims.in_proj_rows), n * q, q,
                                               q + 2, true);
      if (!build.ok()) {
        std::fprintf(stderr, "k1_bench: %s\n", build.status().ToString().c_str());
        return 1;
      }
      *build = k1_for_target(*build, device.info().target, device.info().compute_units);
      if (stages) {
        K1Build clocked = *build;
        clocked.stage_clock = true;
        absl::StatusOr<Timing> timing = time_k1(device, *stream, clocked, 3);
        if (!timing.ok()) std::fprintf(stderr, "k1_bench: %s\n", timing.status().ToString().c_str());
      }
      absl::StatusOr<Timing> timing = time_k1(device, *stream, *build, iterations);
      if (!timing.ok()) {
        std::fprintf(stderr, "k1_bench: %s\n", timing.status().ToString().c_str());
        status = 1;
        continue;
      }
      const int64_t bytes = must_move(*build);
      const double floor_us = bytes / bandwidth * 1e6;
      std::printf("%-52s %10.2f %10.2f %10.2f %10.2f %7.3f\n", k1_name(*build).c_str(), bytes / 1e6,
                  timing->median_ms * 1e3, timing->best_ms * 1e3, floor_us, timing->median_ms * 1e3 / floor_us);
    }
  }
  return status;
}

}  // namespace
}  // namespace monotile::kernels::k3

int main(int argc, char** argv) {
  int iterations = 50;
  bool stages = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--stages") {
      stages = true;
    } else if (std::string(argv[i]) == "--iterations" && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: k1_bench [--iterations N] [--stages]\n");
      return 2;
    }
  }
  return monotile::kernels::k3::run(std::max(iterations, 3), stages);
}
