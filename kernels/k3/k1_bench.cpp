// k1_bench: K1's time at the K3 TP 8 rank's shapes against its HBM floor, measured in the same run.
// The floor is the bytes K1 must move (every weight once, the caches read and written, the
// activations in and out) at the device-to-device copy bandwidth (bytes read + written) of a 1 GiB
// copy timed here. Each launch runs with a fresh step epoch (its flags must not be satisfied by
// the previous launch's) after a 256 MiB read that pushes K1's inputs out of L2 and leaves clean
// lines there (l2_flush.h; --flush write: a memset, whose dirty lines K1's reads then write back).
// Prints, per shape: bytes, median and best time, the floor's time, and the ratio. Without a GPU it says why
// and exits 0.
// The KDA half: K1 followed by o_proj, our DSL GEMV y = core W_o^T (kernels/bench/gemv.h at
// m = T, k = Pl, n = H; the rank's partial, no all-reduce), timed the same way (a fresh epoch and
// the L2 flush before each K1 + GEMV pair, events around the pair), its launches interleaved with
// K1's alone. Its bytes: K1's, plus W_o, the core read back and the partial written.
// Every build the run times is compiled first, on every core (bench_timing.h's precompile).
// usage: k1_bench [--iterations N] [--stages] [--json FILE] [--warm | --flush read|write]
//                 [--pipeline N[,N...]] [--prefetch]
//                 [--prefetch-next] [--kda-loop] [--gemv STEPxROWS[aAHEAD|sSTAGES][,...]] [--stream-k] [--linear]
//                 [--linear-only] [--max-blocks N[,N...]] [--nblocks N[,N...]] [--shapes qQnN[,...]]
//                 [--kda-weights] [--l2-fetch BYTES[,...]] [--conv-state-split]
// --stages: before each timed shape, three launches of its stage_clock build print when stages A,
// B and C end (the latest and the median program).
// --json FILE: the results per shape (name, N, q, bytes, times, floors) and the copy bandwidth,
// for bench/tables/kda_half.py; without a GPU the file says why ("gpu": false, "reason").
// --pipeline N,...: after each shape, the same shape again with N shared-memory stages for the
// in_proj GEMV (K1Build::num_stages, 2 to 6) instead of the most that fit (by default at most 4), a
// row each (not in --json), and a line with the build's shared memory (where N stages do not fit,
// lowering takes fewer: the bytes say how many). With --linear, each linear row too.
// --gemv STEPxROWS[aAHEAD | sSTAGES],...: after each shape, the same shape with the in_proj GEMV's K
// step and rows a task set (K1Build::gemv_step, gemv_rows; e.g. 512x64, 256x48), with "aN" its W
// tiles taken into registers N steps ahead (K1Build::gemv_ahead; e.g. 128x64a2), with "sN" N
// shared-memory stages (K1Build::num_stages; e.g. 128x64s6: W_in's bytes in flight of the linear
// form's wide accumulators, docs/k1_linear.md), a row (and with
// --stages its clock) each; with --linear, each linear row too where the form takes the shape.
// --stream-k: after each shape, the same shape with stage B as stream-K (K1Build::stream_k), a row
// (and with --stages its clock).
// --prefetch: after each shape, the same shape with in_proj's first weights asked into L2 during
// AttnRes's second half (K1Build::prefetch_weights), a row (and with --stages its clock) each.
// --prefetch-next: the same with o_proj's W_o asked into L2 during stage C (K1Build::prefetch_next;
// the half's GEMV then reads it from there); with --prefetch too, a third row with both.
// --kda-loop: the same with stage C's tasks always in its loop (K1Build::kda_loop).
// --kda-weights: the same with stage C's decay weights loaded before its wait for proj
// (K1Build::kda_weights_ahead), a row (and with --stages its clock).
// --conv-state-split: the same with stage C's finish split (K1Build::conv_state_split: the conv
// state as two exact tiles, each quarter its v channels, the finish's loads before the arrival);
// with --kda-weights too, a further row with both.
// --flush read|write: how L2 is flushed before each launch (read, the default: clean lines, as a
// decode step leaves them; write: a memset, dirty lines: the flush of the earlier runs that
// docs/perf_history.md records).
// --linear: the same with AttnRes off the in_proj stream's path (K1Build::linear_in_proj), a row
// (and with --stages its clock: A is then the sources' hand-off on the median program, AttnRes's
// coefficients on the latest) at every shape it takes; where k1_linear_refusal refuses a shape, a
// line says why. With --kda-loop too, a further row with both (K1's smallest code: docs/k1_linear.md);
// with --prefetch too, a further row with the first W_in rows asked into L2 before the sources' wait.
// --max-blocks N,...: the linear rows' builds at max_blocks N (code: the accumulator carries N + 1
// sources; the executor's builds carry the model's, K3's 8) instead of the layer's own blocks.
// --nblocks N,...: the launches' nblocks (0..8, a launch value: the block sources the layer mixes;
// layer 1 has 1): the default form's row at each, and a linear row at each (max_blocks, nblocks) pair
// with nblocks <= max_blocks (without --max-blocks, max_blocks = nblocks).
// --l2-fetch BYTES,...: after each shape (and with --linear, each linear row), the same with L2
// fetching BYTES (64, 128 or 256) around each W_in load of the in_proj GEMV (K1Build::gemv_l2_fetch).
// --linear-only: as --linear, with the variants (--pipeline, --gemv, --prefetch, ...) of the linear
// rows only: the default form's row alone (at each --nblocks) beside them.
// --shapes qQnN,...: only these shapes (q tokens a request, N requests; e.g. q4n1), in the order given.
// --warm: no L2 flush before a launch, so the code, the activations, the caches and what fits of
// the weights stay in L2 from the launch before. Not the decode step's case (the other layers'
// weights stream through L2 in between); beside a flushed run it shows what cold fetches cost,
// instruction fetch included.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "jit/jit.h"
#include "jit/program_build.h"
#include "kernels/bench/gemv.h"
#include "kernels/k3/bench_timing.h"
#include "kernels/k3/k1.h"
#include "model/config.h"
#include "runtime/discovery.h"
#include "runtime/kernel.h"
#include "support/status_macros.h"

namespace monotile::kernels::k3 {
namespace {

constexpr int kSlotsPerRequest = 8;
constexpr int kClockPoints = kK1ClockPoints;

// K1 alone and the KDA half (K1 then the o_proj GEMV), from interleaved launches.
struct HalfTimings {
  Timing k1, half;
  std::string gemv_label;  // the GEMV's configuration (kernels/bench/gemv.h)
};

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

// The KDA half's bytes: K1's, plus o_proj's weight W_o [H, Pl], its input `core` [T, Pl] read back
// and the rank's partial [T, H] written (bf16).
int64_t half_bytes(const K1Build& b) {
  const int64_t t = b.tokens, h = b.hidden, pl = b.projection();
  return must_move(b) + h * pl * 2 + t * pl * 2 + t * h * 2;
}

// Times K1 alone and, with `half`, K1 followed by the o_proj GEMV, their launches interleaved
// (without `half`, `half` of the result stays zero).
absl::StatusOr<HalfTimings> time_k1(runtime::Device& device, runtime::Stream& stream, const K1Build& build,
                                    int iterations, bool half, L2Flush flush) {
  const dsl::Target& target = device.info().target;
  MT_ASSIGN_OR_RETURN(jit::ProgramBuild made, jit::make_build(k1_program(build), target));
  if (build.num_stages != 0 && !build.stage_clock) {
    std::printf("  %s: %lld B of dynamic shared memory\n", k1_name(build).c_str(),
                static_cast<long long>(made.build.launch.dynamic_shared_memory));
  }
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
  integer(ScalarType::kI32, build.nblocks);
  integer(ScalarType::kI32, build.write_index);
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
  MT_ASSIGN_OR_RETURN(uint64_t core, pointer(t * pl * 2, ScalarType::kBf16));
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
  // o_proj's weight W_o [H, Pl]: the half's GEMV reads it, a prefetch_next build asks L2 for it.
  MT_ASSIGN_OR_RETURN(uint64_t w_o, buffer(h * pl * 2));
  if (build.prefetch_next) {
    args.push_back(runtime::KernelArgument::pointer(reinterpret_cast<const void*>(w_o), ScalarType::kBf16));
    integer(ScalarType::kI64, h * pl);
  }
  std::optional<uint64_t> clock;
  if (build.stage_clock) {
    MT_ASSIGN_OR_RETURN(uint64_t address, pointer(int64_t{programs} * kClockPoints * 8, ScalarType::kI64));
    clock = address;
  }
  MT_ASSIGN_OR_RETURN(L2Flusher flusher, L2Flusher::create(device, flush));

  // o_proj: y = core W_o^T, W_o [H, Pl] (zero bytes, as K1's weights), y [T, H], and the GEMV's
  // split-K workspaces (partials, counters zero once) when its configuration splits K.
  std::optional<runtime::Kernel> gemv;
  std::vector<runtime::KernelArgument> gemv_args;
  runtime::Dim3 gemv_grid{1, 1, 1};
  std::string gemv_label;
  if (half) {
    const int m = static_cast<int>(t), n_out = static_cast<int>(h), k_in = static_cast<int>(pl);
    const bench::GemvConfig gemv_shape = bench::gemv_config(m, n_out, k_in);
    const bench::BenchKernel o_proj = bench::gemv_kernel(m, n_out, k_in, gemv_shape);
    gemv_label = bench::gemv_label(gemv_shape);
    MT_ASSIGN_OR_RETURN(jit::ProgramBuild gemv_made, jit::make_build(o_proj.program, target));
    MT_ASSIGN_OR_RETURN(jit::CompiledBuild gemv_compiled, jit::Jit::process_default().compile_build(gemv_made.build));
    MT_ASSIGN_OR_RETURN(runtime::Kernel loaded_gemv,
                        runtime::Kernel::load(device, gemv_compiled, std::move(gemv_made.params)));
    gemv.emplace(std::move(loaded_gemv));
    MT_ASSIGN_OR_RETURN(uint64_t y, buffer(t * h * 2));
    auto as_pointer = [](uint64_t address, dsl::ScalarType type) {
      return runtime::KernelArgument::pointer(reinterpret_cast<const void*>(address), type);
    };
    gemv_args = {as_pointer(core, ScalarType::kBf16), as_pointer(w_o, ScalarType::kBf16), as_pointer(y, ScalarType::kBf16)};
    for (const bench::BenchWorkspace& workspace : o_proj.workspaces) {
      MT_ASSIGN_OR_RETURN(uint64_t space, buffer(workspace.bytes));
      gemv_args.push_back(
          as_pointer(space, workspace.name == bench::kGemvCounters ? ScalarType::kI32 : ScalarType::kF32));
    }
    gemv_grid = {static_cast<uint32_t>(o_proj.grid[0]), static_cast<uint32_t>(o_proj.grid[1]),
                 static_cast<uint32_t>(o_proj.grid[2])};
  }

  // One timed launch (K1, then with `with_gemv` the GEMV) after a fresh epoch (bytes 1..255 in
  // turn: distinct tags from one launch to the next) and a cold L2.
  int launches = 0;
  auto timed = [&](bool with_gemv) -> absl::StatusOr<float> {
    MT_RETURN_IF_ERROR(device.fill_bytes_async(epoch, static_cast<uint8_t>(1 + launches % 255), 4, stream));
    MT_RETURN_IF_ERROR(flusher.run(device, stream, launches));
    ++launches;
    MT_ASSIGN_OR_RETURN(runtime::Event start, device.create_event());
    MT_ASSIGN_OR_RETURN(runtime::Event end, device.create_event());
    MT_RETURN_IF_ERROR(device.record(start, stream));
    MT_RETURN_IF_ERROR(kernel.launch({static_cast<uint32_t>(programs), 1, 1}, args, stream));
    if (with_gemv) MT_RETURN_IF_ERROR(gemv->launch(gemv_grid, gemv_args, stream));
    MT_RETURN_IF_ERROR(device.record(end, stream));
    MT_RETURN_IF_ERROR(device.synchronize(end));
    return device.elapsed_ms(start, end);
  };
  std::vector<float> times, half_times;
  for (int i = 0; i < iterations + 2; ++i) {
    MT_ASSIGN_OR_RETURN(float ms, timed(false));
    if (i >= 2) times.push_back(ms);
    if (half) {
      MT_ASSIGN_OR_RETURN(float pair_ms, timed(true));
      if (i >= 2) half_times.push_back(pair_ms);
    }
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
    std::printf("  stages of %s nb%d (us from the first start; latest / median program; KDA points of the programs that ran a task):\n   ",
                k1_name(build).c_str(), build.nblocks);
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
  HalfTimings result;
  result.k1 = summarize(times);
  if (half) result.half = summarize(half_times);
  result.gemv_label = gemv_label;
  return result;
}

// One shape's results, for --json.
struct ShapeResult {
  std::string name, gemv;
  int requests = 0, q = 0, tokens = 0;
  int64_t k1_bytes = 0, bytes = 0;
  HalfTimings timings;
  double k1_floor_us = 0, floor_us = 0;
};

// One shape's --json object.
std::string shape_json(const ShapeResult& r) {
  char text[1024];
  std::snprintf(text, sizeof text,
                "{\"name\": %s, \"N\": %d, \"q\": %d, \"T\": %d, \"gemv\": %s, \"k1_bytes\": %lld, "
                "\"bytes\": %lld,\n   \"k1_median_us\": %.4f, \"k1_best_us\": %.4f, \"k1_floor_us\": %.4f,\n"
                "   \"half_median_us\": %.4f, \"half_best_us\": %.4f, \"floor_us\": %.4f}",
                json_string(r.name).c_str(), r.requests, r.q, r.tokens, json_string(r.gemv).c_str(),
                static_cast<long long>(r.k1_bytes), static_cast<long long>(r.bytes), r.timings.k1.median_ms * 1e3,
                r.timings.k1.best_ms * 1e3, r.k1_floor_us, r.timings.half.median_ms * 1e3,
                r.timings.half.best_ms * 1e3, r.floor_us);
  return text;
}

// A --gemv variant: the in_proj GEMV's K step, rows a task and GemvTask::ahead.
struct GemvShape {
  int step = 0;
  int rows = 0;
  int ahead = 0;
  int stages = 0;  // K1Build::num_stages (0: the most that fit, at most 4)
};

int run(int iterations, bool stages, const std::string& json, L2Flush flush, const std::vector<int>& pipelines,
        bool prefetch, bool prefetch_next, bool kda_loop, const std::vector<GemvShape>& gemvs, bool stream_k,
        bool linear, bool linear_only, const std::vector<int>& max_blocks, const std::vector<int>& nblocks,
        const std::vector<std::pair<int, int>>& only, bool kda_weights,
        const std::vector<int>& l2_fetches, bool conv_state_split) {
  runtime::DiscoveryOptions options;
  options.include_cpu = false;
  runtime::Discovery found = runtime::discover_devices(options);
  if (found.devices.empty()) {
    const std::string reason = found.missing.empty() ? "" : found.missing.front().reason;
    std::printf("k1_bench: no GPU%s%s\n", reason.empty() ? "" : ": ", reason.c_str());
    if (!json.empty()) {
      write_json_document("k1_bench", json, no_gpu_json_header("no GPU" + (reason.empty() ? "" : ": " + reason)), {});
    }
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
  const double bandwidth = copy_bandwidth(*floor);
  std::printf("k1_bench on %s, %d programs; copy floor: %.1f GB/s (1 GiB D2D copy, best of %d)\n",
              device.info().name.c_str(), device.info().compute_units, bandwidth / 1e9, iterations);
  std::printf("half = K1 + the o_proj GEMV (core [T, 1536] x W_o^T [1536, 7168], the rank's partial); median of %d; %s\n",
              iterations, l2_flush_description(flush).c_str());
  std::printf("%-52s %8s %9s %9s %9s %6s | %8s %9s %9s %9s %6s\n", "build (K3 TP8 rank 0, layer 1, delta)", "K1 MB",
              "median us", "best us", "floor us", "ratio", "half MB", "median us", "best us", "floor us", "ratio");
  model::ModelConfig config = *model::load_config("k3");
  model::RankDims dims = *model::rank_dims(config, 8, 0);
  int status = 0;
  std::vector<ShapeResult> results;
  std::vector<K1Build> shapes;
  std::vector<std::pair<int, int>> wanted = only;  // (q, N)
  if (wanted.empty()) {
    for (int q : {4, 2}) {
      for (int n : {1, 2, 4}) wanted.emplace_back(q, n);
    }
  }
  for (auto [q, n] : wanted) {
    absl::StatusOr<K1Build> build = k1_build(config, 1, dims.kda_heads, static_cast<int>(dims.in_proj_rows), n * q, q,
                                             q + 2, true);
    if (!build.ok()) {
      std::fprintf(stderr, "k1_bench: %s\n", build.status().ToString().c_str());
      return 1;
    }
    shapes.push_back(k1_for_target(*build, device.info().target));
  }
  // Each shape's --pipeline variants, timed after it.
  auto variants_of = [&](const K1Build& b, bool quiet) {
    std::vector<K1Build> out;
    // The default form's variants (not with --linear-only).
    if (!linear_only) {
      for (int n : pipelines) {
        out.push_back(b);
        out.back().num_stages = n;
      }
      if (prefetch) {
        out.push_back(b);
        out.back().prefetch_weights = true;
      }
      if (prefetch_next) {
        out.push_back(b);
        out.back().prefetch_next = true;
      }
      if (kda_loop) {
        out.push_back(b);
        out.back().kda_loop = true;
      }
      if (kda_weights) {
        out.push_back(b);
        out.back().kda_weights_ahead = true;
      }
      if (conv_state_split) {
        out.push_back(b);
        out.back().conv_state_split = true;
        if (kda_weights) {
          out.push_back(out.back());
          out.back().kda_weights_ahead = true;
        }
      }
      if (prefetch && prefetch_next) {
        out.push_back(b);
        out.back().prefetch_weights = true;
        out.back().prefetch_next = true;
      }
      for (const GemvShape& g : gemvs) {
        out.push_back(b);
        out.back().gemv_step = g.step;
        out.back().gemv_rows = g.rows;
        out.back().gemv_ahead = g.ahead;
        out.back().num_stages = g.stages;
      }
      for (int bytes : l2_fetches) {
        out.push_back(b);
        out.back().gemv_l2_fetch = bytes;
      }
      if (stream_k) {
        out.push_back(b);
        out.back().stream_k = true;
      }
    }
    // The default form at the other --nblocks (the same code: a launch value).
    for (int nb : nblocks) {
      if (nb == b.nblocks) continue;
      out.push_back(b);
      out.back().nblocks = nb;
    }
    if (linear) {
      // By default a build for the blocks of the bench's layer alone: the model's max_blocks (K3: 8,
      // 9 sources) pads to 256 accumulator columns at 16 tokens, which the linear form refuses.
      const std::vector<int> launches = nblocks.empty() ? std::vector<int>{b.nblocks} : nblocks;
      for (int mb : max_blocks.empty() ? launches : max_blocks) {
        for (int nb : launches) {
          if (nb > mb || (max_blocks.empty() && nb != mb)) continue;
          K1Build v = b;
          v.linear_in_proj = true;
          v.max_blocks = mb;
          v.nblocks = nb;
          const std::string refusal = k1_linear_refusal(v);
          if (refusal.empty()) {
            out.push_back(v);
            // With --kda-loop too, a row with both: the smallest code (one copy of stage C's task).
            if (kda_loop) {
              out.push_back(v);
              out.back().kda_loop = true;
            }
            // With --prefetch too, a row with its first W_in rows asked into L2 before the sources' wait.
            if (prefetch) {
              out.push_back(v);
              out.back().prefetch_weights = true;
            }
            for (int n : pipelines) {
              out.push_back(v);
              out.back().num_stages = n;
            }
            for (const GemvShape& g : gemvs) {
              K1Build w = v;
              w.gemv_step = g.step;
              w.gemv_rows = g.rows;
              w.gemv_ahead = g.ahead;
              w.num_stages = g.stages;
              if (k1_linear_refusal(w).empty()) out.push_back(w);
            }
            for (int bytes : l2_fetches) {
              out.push_back(v);
              out.back().gemv_l2_fetch = bytes;
            }
          } else if (!quiet) {
            std::printf("%s max_blocks %d: no linear in_proj: %s\n", k1_name(b).c_str(), mb, refusal.c_str());
          }
        }
      }
    }
    return out;
  };
  // Every program the run times (with --stages, each shape's clock build too; the half's o_proj GEMV).
  auto clocked = [](K1Build b) {
    b.stage_clock = true;
    return b;
  };
  std::vector<dsl::Program> programs;
  for (const K1Build& b : shapes) {
    if (stages) programs.push_back(k1_program(clocked(b)));
    programs.push_back(k1_program(b));
    for (const K1Build& v : variants_of(b, true)) {
      programs.push_back(k1_program(v));
      if (stages && v.num_stages == 0) programs.push_back(k1_program(clocked(v)));
    }
    const int m = b.tokens, n_out = b.hidden, k_in = static_cast<int>(b.projection());
    programs.push_back(bench::gemv_kernel(m, n_out, k_in, bench::gemv_config(m, n_out, k_in)).program);
  }
  precompile(programs, device.info().target);
  // Times `build` and prints its row; nullopt (the error printed) where it failed.
  auto time_row = [&](const K1Build& build) -> std::optional<ShapeResult> {
    absl::StatusOr<HalfTimings> timing = time_k1(device, *stream, build, iterations, true, flush);
    if (!timing.ok()) {
      std::fprintf(stderr, "k1_bench: %s\n", timing.status().ToString().c_str());
      return std::nullopt;
    }
    ShapeResult r;
    r.name = k1_name(build);
    r.gemv = timing->gemv_label;
    r.requests = build.requests();
    r.q = build.q;
    r.tokens = build.tokens;
    r.k1_bytes = must_move(build);
    r.bytes = half_bytes(build);
    r.timings = *timing;
    r.k1_floor_us = r.k1_bytes / bandwidth * 1e6;
    r.floor_us = r.bytes / bandwidth * 1e6;
    const double k1_us = timing->k1.median_ms * 1e3, half_us = timing->half.median_ms * 1e3;
    const std::string label = absl::StrCat(r.name, " nb", build.nblocks);
    std::printf("%-52s %8.2f %9.2f %9.2f %9.2f %6.3f | %8.2f %9.2f %9.2f %9.2f %6.3f\n", label.c_str(),
                r.k1_bytes / 1e6, k1_us, timing->k1.best_ms * 1e3, r.k1_floor_us, k1_us / r.k1_floor_us,
                r.bytes / 1e6, half_us, timing->half.best_ms * 1e3, r.floor_us, half_us / r.floor_us);
    return r;
  };
  // Three launches of the build's stage_clock twin, which print when its stages end.
  auto print_clock = [&](const K1Build& build) {
    absl::StatusOr<HalfTimings> timing = time_k1(device, *stream, clocked(build), 3, false, flush);
    if (!timing.ok()) std::fprintf(stderr, "k1_bench: %s\n", timing.status().ToString().c_str());
  };
  for (const K1Build& build : shapes) {
    if (stages) print_clock(build);
    std::optional<ShapeResult> r = time_row(build);
    if (!r) {
      status = 1;
      continue;
    }
    for (const K1Build& v : variants_of(build, false)) {
      if (stages && v.num_stages == 0) print_clock(v);
      if (!time_row(v)) status = 1;
    }
    results.push_back(std::move(*r));
  }
  if (!json.empty()) {
    std::vector<std::string> objects;
    for (const ShapeResult& r : results) objects.push_back(shape_json(r));
    if (!write_json_document("k1_bench", json, gpu_json_header(device.info(), iterations, bandwidth, flush), objects)) {
      status = 1;
    }
  }
  return status;
}

}  // namespace
}  // namespace monotile::kernels::k3

int main(int argc, char** argv) {
  // A row at a time: a run cut short by a time limit keeps the rows it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int iterations = 50;
  bool stages = false;
  monotile::kernels::k3::L2Flush flush = monotile::kernels::k3::L2Flush::kRead;
  std::string json;
  std::vector<int> pipelines;
  bool prefetch = false;
  bool prefetch_next = false;
  bool kda_loop = false;
  std::vector<monotile::kernels::k3::GemvShape> gemvs;
  bool stream_k = false;
  bool linear = false;
  bool linear_only = false;
  bool kda_weights = false;
  bool conv_state_split = false;
  std::vector<int> max_blocks, nblocks, l2_fetches;
  std::vector<std::pair<int, int>> only;
  // A comma-separated list of integers in [low, high] for `flag`; false (said why) otherwise.
  auto integers = [](const char* flag, const char* text, int low, int high, std::vector<int>& out) {
    const std::vector<std::string> values = absl::StrSplit(text, ',', absl::SkipEmpty());
    for (const std::string& v : values) {
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != 0 || n < low || n > high) {
        std::fprintf(stderr, "k1_bench: %s %s: expected integers %d to %d\n", flag, v.c_str(), low, high);
        return false;
      }
      out.push_back(static_cast<int>(n));
    }
    return !out.empty();
  };
  const char* usage =
      "usage: k1_bench [--iterations N] [--stages] [--json FILE] [--warm | --flush read|write] [--pipeline N[,N...]]\n"
      "                [--prefetch]\n"
      "                [--prefetch-next] [--kda-loop] [--gemv STEPxROWS[aAHEAD|sSTAGES][,...]] [--stream-k] [--linear]\n"
      "                [--linear-only] [--max-blocks N[,N...]] [--nblocks N[,N...]] [--shapes qQnN[,...]]\n"
      "                [--kda-weights] [--l2-fetch BYTES[,...]] [--conv-state-split]\n";
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--pipeline" && i + 1 < argc) {
      const std::vector<std::string> values = absl::StrSplit(argv[++i], ',', absl::SkipEmpty());
      for (const std::string& v : values) {
        const int n = std::atoi(v.c_str());
        if (n < 2 || n > 6) {
          std::fprintf(stderr, "k1_bench: --pipeline %s: expected 2 to 6\n", v.c_str());
          return 2;
        }
        pipelines.push_back(n);
      }
    } else if (std::string(argv[i]) == "--gemv" && i + 1 < argc) {
      const std::vector<std::string> values = absl::StrSplit(argv[++i], ',', absl::SkipEmpty());
      for (const std::string& v : values) {
        monotile::kernels::k3::GemvShape g;
        // The whole text must match one form: STEPxROWS, STEPxROWSaN or STEPxROWSsN.
        int used = 0;
        const int n = static_cast<int>(v.size());
        const bool read = (std::sscanf(v.c_str(), "%dx%d%n", &g.step, &g.rows, &used) == 2 && used == n) ||
                          (std::sscanf(v.c_str(), "%dx%da%d%n", &g.step, &g.rows, &g.ahead, &used) == 3 && used == n) ||
                          (std::sscanf(v.c_str(), "%dx%ds%d%n", &g.step, &g.rows, &g.stages, &used) == 3 && used == n);
        if (!read || g.step < 16 || (g.rows != 48 && g.rows != 64) || g.ahead < 0 || g.ahead > 4 ||
            (g.stages != 0 && (g.stages < 2 || g.stages > 8))) {
          std::fprintf(stderr,
                       "k1_bench: --gemv %s: expected STEPxROWS[aAHEAD | sSTAGES], rows 48 or 64, ahead 0 to 4, stages 2 "
                       "to 8 (e.g. 512x64, 128x64a2, 128x64s6)\n",
                       v.c_str());
          return 2;
        }
        gemvs.push_back(g);
      }
    } else if (std::string(argv[i]) == "--stream-k") {
      stream_k = true;
    } else if (std::string(argv[i]) == "--linear") {
      linear = true;
    } else if (std::string(argv[i]) == "--linear-only") {
      linear_only = true;
    } else if (std::string(argv[i]) == "--max-blocks" && i + 1 < argc) {
      // The bench's blocks buffer holds 8 block sources; a build may carry up to 14.
      if (!integers("--max-blocks", argv[++i], 0, 14, max_blocks)) return 2;
    } else if (std::string(argv[i]) == "--l2-fetch" && i + 1 < argc) {
      if (!integers("--l2-fetch", argv[++i], 64, 256, l2_fetches)) return 2;
      for (int bytes : l2_fetches) {
        if (bytes != 64 && bytes != 128 && bytes != 256) {
          std::fprintf(stderr, "k1_bench: --l2-fetch %d: expected 64, 128 or 256\n", bytes);
          return 2;
        }
      }
    } else if (std::string(argv[i]) == "--nblocks" && i + 1 < argc) {
      if (!integers("--nblocks", argv[++i], 0, 8, nblocks)) return 2;
    } else if (std::string(argv[i]) == "--shapes" && i + 1 < argc) {
      const std::vector<std::string> values = absl::StrSplit(argv[++i], ',', absl::SkipEmpty());
      for (const std::string& v : values) {
        int q = 0, n = 0;
        char end = 0;
        if (std::sscanf(v.c_str(), "q%dn%d%c", &q, &n, &end) != 2 || q < 2 || q > 8 || n < 1 || n * q > 16) {
          std::fprintf(stderr, "k1_bench: --shapes %s: expected qQnN, q 2 to 8, N x q <= 16 (e.g. q4n1)\n", v.c_str());
          return 2;
        }
        only.emplace_back(q, n);
      }
    } else if (std::string(argv[i]) == "--prefetch") {
      prefetch = true;
    } else if (std::string(argv[i]) == "--prefetch-next") {
      prefetch_next = true;
    } else if (std::string(argv[i]) == "--kda-loop") {
      kda_loop = true;
    } else if (std::string(argv[i]) == "--kda-weights") {
      kda_weights = true;
    } else if (std::string(argv[i]) == "--conv-state-split") {
      conv_state_split = true;
    } else if (std::string(argv[i]) == "--stages") {
      stages = true;
    } else if (std::string(argv[i]) == "--warm") {
      flush = monotile::kernels::k3::L2Flush::kNone;
    } else if (std::string(argv[i]) == "--flush" && i + 1 < argc) {
      const std::optional<monotile::kernels::k3::L2Flush> mode =
          monotile::kernels::k3::parse_flush_option("k1_bench", argv[++i]);
      if (!mode) return 2;
      flush = *mode;
    } else if (std::string(argv[i]) == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else if (std::string(argv[i]) == "--iterations" && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "%s", usage);
      return 2;
    }
  }
  return monotile::kernels::k3::run(std::max(iterations, 3), stages, json, flush, pipelines, prefetch, prefetch_next,
                                    kda_loop, gemvs, stream_k, linear || linear_only, linear_only, max_blocks, nblocks,
                                    only, kda_weights, l2_fetches, conv_state_split);
}
