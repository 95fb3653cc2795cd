// k2_bench: K2's time at the K3 TP 8 rank's shapes (rank 0, layer 13; T = 4, 8, 16) against its HBM
// floor, measured in the same run. The floor is the bytes this step must read and write at the
// device-to-device copy bandwidth timed here: o_proj, the router, the latent and shared weights,
// the up rows, the MXFP4 bytes of the distinct experts the router actually chose (counted from K2's
// own union, printed), and the activations. Inputs that decide the route (core, the prefix and
// blocks, W_o, the AttnRes projection, the gate) are random so that rows choose different experts;
// the other weights are zero bytes (K2's time does not depend on their values). Each launch runs
// with a fresh step epoch after a 256 MiB read (cold L2, clean lines, as a decode step leaves it;
// l2_flush.h; --flush write: a memset, dirty lines, the flush of the earlier runs that
// docs/perf_history.md records). Without a GPU it says why and exits 0.
// Every build the run times is compiled first, on every core (bench_timing.h's precompile).
// usage: k2_bench [--iterations N] [--clock] [--json FILE] [--flush read|write] [--ahead N[,N...]]
// [--stages N[,N...]]
//                 [--flip-x-ahead] [--prefetch-steps N[,N...]] [--l2-fetch N[,N...]] [--byte-pairs]
//                 [--exact-decode] [--shift-placement] [--gemv-step N[,N...]]
//                 [--routed-chunks N[,N...]] [--latent-rows N[,N...]] [--front-parts N[,N...]]
//                 [--expert-stages N[,N...]] [--expert-stage-steps N[,N...]] [--expert-codes-ahead]
//                 [--expert-stage-fetch N[,N...]] [--expert-task-loop N[,N...]]
//                 [--expert-first-fetch N[,N...]] [--up-ahead]
//                 [--routed-stages N[,N...]] [--shared-early]
//                 [--chunk-handoff] [--together]
// --clock: before each timed shape, three launches of its stage_clock build (k2_clock.h); then one
// table of every clock point of the last such launch per shape: the latest and the median program's
// time (us from the earliest program start, over the programs that passed the point), the distinct
// experts of that launch, and the median program's first task of H and of I.
// --ahead N,...: after each shape, the same shape again with the routed experts' loads N K steps
// ahead (K2Build::expert_ahead) instead of 2, a row each (not in --json).
// --stages N,...: likewise with N shared-memory stages for the bf16 GEMVs' pipelined dots
// (K2Build::num_stages) instead of k2_for_target's (3 on NVIDIA): fewer leave L1 more room.
// --flip-x-ahead: likewise with K2Build::expert_x_ahead flipped (the experts' x words loaded with
// their weights, or in their own step).
// --prefetch-steps N,...: likewise with the routed experts' GEMVs asking L2 for their weights N K
// steps past their loads (K2Build::expert_prefetch_steps; 0 for none).
// --l2-fetch N,...: likewise with L2 fetching N bytes (64, 128 or 256) around each of their weight
// loads (K2Build::expert_l2_fetch).
// --routed-chunks N,...: likewise with stage I's tasks over at most N union chunks instead of 32
// (K2Build::routed_chunks: fewer, longer tasks).
// --byte-pairs: likewise with the experts' weights decoded a byte at a time instead of a word
// (K2Build::mxfp4_words false).
// --exact-decode: likewise with every expert task at the exact decode's two multiplies a word
// (K2Build::mxfp4_scale_bias 0).
// --shift-placement: likewise with the experts' nibbles put into bf16's places by two shifts a word
// instead of the two-copy multiply (K2Build::mxfp4_shift_placement: the same values, the decode
// before it; the name ends "_ps").
// --gemv-step N,...: likewise with the bf16 GEMVs' K steps up to N (K2Build::gemv_step: 128 to
// 1024) instead of 256.
// --latent-rows N,...: likewise with stage D's tasks N latent rows each instead of 64
// (K2Build::latent_rows, a multiple of 16 up to 128).
// --expert-stages N,...: likewise with stage H's MXFP4 words and x copied through N shared-memory
// stages (K2Build::expert_stages, 2 to 8) instead of the register pipeline.
// --expert-stage-steps N,...: likewise with stage H's shared-memory stages each copying N K steps
// (K2Build::expert_stage_steps: 2 copies 128 bytes of a row a stage, twice the weight bytes in
// flight of 1), through each of --expert-stages' counts (else the build's, else 4): a row per count
// and N.
// --expert-codes-ahead: likewise with the staged loops' scale codes loaded an iteration ahead
// (K2Build::expert_codes_ahead: stage I's at every width on NVIDIA, H's where staged).
// --expert-stage-fetch N,...: likewise with L2 fetching N bytes (64, 128 or 256) around each copy
// of the staged loops (K2Build::expert_stage_fetch: I's at every width on NVIDIA, H's where
// staged).
// --expert-task-loop N,...: likewise with each program's first N H tasks as one staged loop
// (K2Build::expert_task_loop), H staged through --expert-stages' first count where the build does
// not stage it (else 4).
// --expert-first-fetch N,...: likewise with each program's first H task asking L2 for its rows'
// first N K steps once the route's union is known (K2Build::expert_first_fetch; 28 at K3: all).
// --up-ahead: likewise with every program asking L2 for a share of W_up before H's waits
// (K2Build::up_ahead).
// --routed-stages N,...: likewise stage I's (K2Build::routed_stages).
// --shared-early: likewise with stage F between H and I (K2Build::shared_early).
// --chunk-handoff: likewise with stage I's tasks waiting for their own chunk's H tasks only
// (K2Build::chunk_handoff).
// --front-parts N,...: likewise with stages D's and E's tasks in N parts of K
// (K2Build::front_parts; 1 keeps each row block whole) instead of the build's (3 at K3).
// --together: after those rows, one with every variant asked for at once (a list flag's first
// value); with --clock, that build's stage clock too (its column "T n all").
// --json FILE: the results per shape (name, T, distinct experts, bytes, median and best time,
// floor, and the route: each token's top_k experts in the last launch, which bench's MoE peers then
// run) and the copy bandwidth, for bench/tables/moe.py; without a GPU the file says why ("gpu":
// false, "reason").
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "dsl/memory.h"
#include "jit/jit.h"
#include "jit/program_build.h"
#include "kernels/k3/bench_timing.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/k2.h"
#include "kernels/k3/k2_clock.h"
#include "kernels/k3/moe_stage.h"
#include "kernels/k3/mxfp4_gemv.h"
#include "model/config.h"
#include "model/dtype.h"
#include "runtime/discovery.h"
#include "runtime/kernel.h"
#include "support/status_macros.h"

namespace monotile::kernels::k3 {
namespace {

constexpr int kLayer = 13;

struct Result {
  Timing timing;
  int distinct_experts = 0;
  int64_t bytes = 0;
  std::vector<int64_t> clock;  // a stage_clock build's last launch: [programs, kK2ClockPoints] ns
  std::vector<int32_t> route;  // the last launch's route_experts [T, top_k], for --json
};

// The bytes K2 must move with `distinct` experts chosen (k2.h's parameters), scratch excluded.
int64_t must_move(const K2Build& b, int distinct) {
  const int64_t t = b.tokens, h = b.hidden, lat = b.latent, ir = b.expert_rows, si = b.shared_rows;
  int64_t bytes = h * int64_t{b.core_width} * 2;        // W_o
  bytes += int64_t{b.experts} * h * 2 + b.experts * 4;  // the gate and its bias
  bytes += lat * h * 2 + 2 * si * h * 2 + h * si * 2;   // the latent, shared gate/up and down
  bytes += int64_t{b.up_rows} * lat * 2 + 3 * h * 2 + lat * 2;  // the up rows and the norms
  bytes += distinct *
           (2 * ir * lat / 2 + 2 * ir * lat / 32 + lat * ir / 2 + lat * ir / 32);  // MXFP4 experts
  bytes += t * b.core_width * 2;                                                   // core
  bytes +=
      t * h * 2 * 2 + t * int64_t{b.nblocks} * h * 2;  // the prefix read and written, the blocks
  bytes += t * h * 2;                                  // out
  return bytes;
}

absl::StatusOr<Result> time_k2(runtime::Device& device, runtime::Stream& stream,
                               const K2Build& build, int iterations, L2Flush flush) {
  MT_ASSIGN_OR_RETURN(jit::ProgramBuild made,
                      jit::make_build(k2_program(build), device.info().target));
  MT_ASSIGN_OR_RETURN(jit::CompiledBuild compiled,
                      jit::Jit::process_default().compile_build(made.build));
  MT_ASSIGN_OR_RETURN(runtime::Kernel kernel,
                      runtime::Kernel::load(device, compiled, std::move(made.params)));

  std::mt19937 rng(20261204);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<runtime::DeviceBuffer> keep;
  std::vector<runtime::KernelArgument> args;
  using dsl::ScalarType;
  auto buffer = [&](int64_t bytes) -> absl::StatusOr<uint64_t> {
    MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer b, device.allocate(std::max<int64_t>(bytes, 256)));
    MT_RETURN_IF_ERROR(device.fill_bytes(b.address(), 0, std::max<int64_t>(bytes, 256)));
    const uint64_t address = b.address();
    keep.push_back(std::move(b));
    return address;
  };
  auto pointer = [&](uint64_t address, ScalarType type) {
    args.push_back(runtime::KernelArgument::pointer(reinterpret_cast<const void*>(address), type));
  };
  auto zeros = [&](int64_t bytes, ScalarType type) -> absl::Status {
    MT_ASSIGN_OR_RETURN(uint64_t address, buffer(bytes));
    pointer(address, type);
    return absl::OkStatus();
  };
  // bf16 values of N(0, scale^2), or all `constant`.
  auto bf16s = [&](int64_t count, double scale, double constant = 0) -> absl::Status {
    std::vector<uint16_t> host(count);
    for (uint16_t& v : host)
      v = model::bf16_from_double(scale > 0 ? scale * normal(rng) : constant);
    MT_ASSIGN_OR_RETURN(uint64_t address, buffer(count * 2));
    MT_RETURN_IF_ERROR(device.copy_to_device(address, host.data(), host.size() * 2));
    pointer(address, ScalarType::kBf16);
    return absl::OkStatus();
  };
  const int64_t t = build.tokens, h = build.hidden, e = build.experts, lat = build.latent,
                ir = build.expert_rows;
  const int64_t si = build.shared_rows, blocks = 8;
  MT_RETURN_IF_ERROR(bf16s(t * build.core_width, 1.0));  // core
  MT_RETURN_IF_ERROR(
      bf16s(h * build.core_width, 1.0 / std::sqrt(double(build.core_width))));  // w_o
  MT_RETURN_IF_ERROR(bf16s(t * h, 1.0));                                        // prefix
  MT_RETURN_IF_ERROR(bf16s(t * blocks * h, 1.0));                               // blocks
  args.push_back(runtime::KernelArgument::integer(ScalarType::kI64, blocks * h));
  args.push_back(runtime::KernelArgument::integer(ScalarType::kI64, h));
  args.push_back(runtime::KernelArgument::integer(ScalarType::kI32, build.nblocks));
  args.push_back(runtime::KernelArgument::integer(ScalarType::kI32, build.reset ? 1 : 0));
  MT_RETURN_IF_ERROR(bf16s(h, 0, 1.0));                                            // mlp_res_norm
  MT_RETURN_IF_ERROR(bf16s(h, 1.0 / std::sqrt(double(h))));                        // mlp_res_proj
  MT_RETURN_IF_ERROR(bf16s(h, 0, 1.0));                                            // post_norm
  MT_RETURN_IF_ERROR(bf16s(e * h, 1.0 / std::sqrt(double(h))));                    // w_gate
  MT_RETURN_IF_ERROR(zeros(e * 4, ScalarType::kF32));                              // gate_bias
  MT_RETURN_IF_ERROR(zeros(lat * h * 2, ScalarType::kBf16));                       // w_ld
  MT_RETURN_IF_ERROR(zeros(2 * si * h * 2, ScalarType::kBf16));                    // w_gu
  MT_RETURN_IF_ERROR(zeros(h * si * 2, ScalarType::kBf16));                        // w_sd
  MT_RETURN_IF_ERROR(zeros(e * 2 * ir * lat / 2, ScalarType::kU8));                // w13
  MT_RETURN_IF_ERROR(zeros(e * 2 * ir * lat / 32, ScalarType::kU8));               // w13_scale
  MT_RETURN_IF_ERROR(zeros(e * lat * ir / 2, ScalarType::kU8));                    // w2
  MT_RETURN_IF_ERROR(zeros(e * lat * ir / 32, ScalarType::kU8));                   // w2_scale
  MT_RETURN_IF_ERROR(bf16s(lat, 0, 1.0));                                          // latent_norm
  MT_RETURN_IF_ERROR(zeros(int64_t{build.up_rows} * lat * 2, ScalarType::kBf16));  // w_up
  MT_RETURN_IF_ERROR(zeros(t * h * 2, ScalarType::kBf16));                         // out
  MT_ASSIGN_OR_RETURN(uint64_t route, buffer(t * build.top_k * 4));                // route_experts
  pointer(route, ScalarType::kI32);
  MT_RETURN_IF_ERROR(zeros(t * build.top_k * 4, ScalarType::kF32));  // route_weights
  const K2Scratch layout = k2_scratch(build);
  MT_ASSIGN_OR_RETURN(uint64_t scratch, buffer(layout.bytes));
  const std::pair<int64_t, ScalarType> views[] = {
      {layout.a_rows, ScalarType::kBf16},   {layout.y_rows, ScalarType::kBf16},
      {layout.ares, ScalarType::kF32},      {layout.logits, ScalarType::kF32},
      {layout.lat, ScalarType::kBf16},      {layout.latent_sum, ScalarType::kBf16},
      {layout.normed, ScalarType::kBf16},   {layout.act, ScalarType::kBf16},
      {layout.shared, ScalarType::kBf16},   {layout.sorted, ScalarType::kI32},
      {layout.union_ids, ScalarType::kI32}, {layout.union_count, ScalarType::kI32},
      {layout.inter, ScalarType::kBf16},    {layout.flags, ScalarType::kI32},
      {layout.counters, ScalarType::kI32}};
  for (auto [offset, type] : views) pointer(scratch + offset, type);
  MT_ASSIGN_OR_RETURN(uint64_t epoch, buffer(4));
  pointer(epoch, ScalarType::kI32);
  args.push_back(runtime::KernelArgument::integer(ScalarType::kI32, 128 + kLayer));
  const int programs = device.info().compute_units;
  MT_ASSIGN_OR_RETURN(uint64_t health, buffer(health_words(programs) * 4));
  pointer(health, ScalarType::kI32);
  MT_RETURN_IF_ERROR(zeros(4, ScalarType::kI32));  // alarm
  const int64_t clock_words = build.stage_clock ? int64_t{programs} * kK2ClockPoints : 0;
  uint64_t clock = 0;
  if (build.stage_clock) {
    MT_ASSIGN_OR_RETURN(clock,
                        buffer(clock_words * 8));  // zeroed once: a point never passed stays 0
    pointer(clock, ScalarType::kI64);
  }
  MT_ASSIGN_OR_RETURN(L2Flusher flusher, L2Flusher::create(device, flush));

  std::vector<float> times;
  for (int i = 0; i < iterations + 2; ++i) {
    MT_RETURN_IF_ERROR(
        device.fill_bytes_async(epoch, static_cast<uint8_t>(1 + i % 255), 4, stream));
    MT_RETURN_IF_ERROR(flusher.run(device, stream, i));
    MT_ASSIGN_OR_RETURN(runtime::Event start, device.create_event());
    MT_ASSIGN_OR_RETURN(runtime::Event end, device.create_event());
    MT_RETURN_IF_ERROR(device.record(start, stream));
    MT_RETURN_IF_ERROR(kernel.launch({static_cast<uint32_t>(programs), 1, 1}, args, stream));
    MT_RETURN_IF_ERROR(device.record(end, stream));
    MT_RETURN_IF_ERROR(device.synchronize(end));
    MT_ASSIGN_OR_RETURN(float ms, device.elapsed_ms(start, end));
    if (i >= 2) times.push_back(ms);
  }
  int32_t failed = 0, distinct = 0;
  MT_RETURN_IF_ERROR(device.copy_to_host(&failed, health, 4));
  if (failed != 0)
    return absl::InternalError(k2_name(build) + ": a hand-off wait gave up (health word 0 set)");
  MT_RETURN_IF_ERROR(device.copy_to_host(&distinct, scratch + layout.union_count, 4));
  std::vector<int32_t> experts(static_cast<size_t>(t * build.top_k));
  MT_RETURN_IF_ERROR(device.copy_to_host(experts.data(), route, experts.size() * 4));
  std::vector<int64_t> ticks(static_cast<size_t>(clock_words));
  if (clock_words > 0)
    MT_RETURN_IF_ERROR(device.copy_to_host(ticks.data(), clock, ticks.size() * 8));
  return Result{summarize(times), distinct, must_move(build, distinct), std::move(ticks),
                std::move(experts)};
}

// One shape's stage clock: per point, the latest and the median program's time in us from the
// earliest program start (programs that did not pass the point left out); per program, the time of
// its first task of H and of I (the median program's).
struct ClockColumn {
  std::string label;  // "T 4", or "T 4 all" for the --together build
  int tokens = 0, distinct_experts = 0;
  std::vector<double> latest, median;  // [kK2ClockPoints]; -1 where no program passed the point
  double h_task = -1, i_task = -1;
};

double median_of(std::vector<int64_t> values) {
  if (values.empty()) return -1;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2] / 1e3;
}

ClockColumn clock_column(const std::string& label, int tokens, const Result& r) {
  ClockColumn c;
  c.label = label;
  c.tokens = tokens;
  c.distinct_experts = r.distinct_experts;
  const int programs = static_cast<int>(r.clock.size()) / kK2ClockPoints;
  auto at = [&](int p, K2ClockPoint point) {
    return r.clock[p * kK2ClockPoints + static_cast<int>(point)];
  };
  int64_t first = at(0, K2ClockPoint::kStart);
  for (int p = 0; p < programs; ++p) first = std::min(first, at(p, K2ClockPoint::kStart));
  for (int point = 0; point < kK2ClockPoints; ++point) {
    std::vector<int64_t> passed;
    for (int p = 0; p < programs; ++p) {
      if (const int64_t tick = at(p, static_cast<K2ClockPoint>(point)); tick != 0)
        passed.push_back(tick - first);
    }
    c.latest.push_back(passed.empty() ? -1 : *std::max_element(passed.begin(), passed.end()) / 1e3);
    c.median.push_back(median_of(passed));
  }
  std::vector<int64_t> h_tasks, i_tasks;
  for (int p = 0; p < programs; ++p) {
    if (at(p, K2ClockPoint::kExpertFirst) != 0) {
      h_tasks.push_back(at(p, K2ClockPoint::kExpertFirst) - at(p, K2ClockPoint::kExpertsReady));
    }
    if (at(p, K2ClockPoint::kRoutedFirst) != 0) {
      i_tasks.push_back(at(p, K2ClockPoint::kRoutedFirst) - at(p, K2ClockPoint::kRoutedReady));
    }
  }
  c.h_task = median_of(h_tasks);
  c.i_task = median_of(i_tasks);
  return c;
}

// One shape's results, for --json.
struct ShapeResult {
  std::string name;
  int tokens = 0, distinct_experts = 0;
  int64_t bytes = 0;
  double median_us = 0, best_us = 0, floor_us = 0;
  std::vector<int32_t> route;  // [T, top_k]: bench's MoE peers run these experts
  int top_k = 0;
};

// One shape's --json object.
std::string shape_json(const ShapeResult& r) {
  char text[512];
  std::snprintf(text, sizeof text,
                "{\"name\": %s, \"T\": %d, \"distinct_experts\": %d, \"bytes\": %lld,\n"
                "   \"median_us\": %.4f, \"best_us\": %.4f, \"floor_us\": %.4f}",
                json_string(r.name).c_str(), r.tokens, r.distinct_experts,
                static_cast<long long>(r.bytes), r.median_us, r.best_us, r.floor_us);
  std::string json = text;
  json.pop_back();  // the closing brace: the route follows, one token's experts a row
  json += ",\n   \"route\": [";
  for (size_t i = 0; i < r.route.size(); ++i) {
    json += (i == 0 ? "[" : i % r.top_k == 0 ? "], [" : ", ") + std::to_string(r.route[i]);
  }
  return json + (r.route.empty() ? "]}" : "]]}");
}

// One build's row of the table (its floor from the bytes it moved at `bandwidth`).
void print_row(const std::string& name, const Result& r, double bandwidth) {
  const double us = r.timing.median_ms * 1e3, floor_us = r.bytes / bandwidth * 1e6;
  std::printf("%-72s %8d %8.2f %9.2f %9.2f %9.2f %6.3f\n", name.c_str(), r.distinct_experts,
              r.bytes / 1e6, us, r.timing.best_ms * 1e3, floor_us, us / floor_us);
}

void print_clock(const std::vector<ClockColumn>& columns) {
  if (columns.empty()) return;
  std::printf(
      "\nstage clock (the last of 3 launches of each shape's _clock build; us from the earliest "
      "program\n"
      "start; latest / median program over the programs that passed the point)\n%-16s",
      "point");
  for (const ClockColumn& c : columns)
    std::printf(" | %-8s %6s %6s", c.label.c_str(), "latest", "median");
  std::printf("\n%-16s", "distinct experts");
  for (const ClockColumn& c : columns) std::printf(" | %22d", c.distinct_experts);
  std::printf("\n");
  for (int point = 0; point < kK2ClockPoints; ++point) {
    std::printf("%-16s", kK2ClockPointNames[point]);
    for (const ClockColumn& c : columns)
      std::printf(" | %15.2f %6.2f", c.latest[point], c.median[point]);
    std::printf("\n");
  }
  std::printf("%-16s", "H task (median)");
  for (const ClockColumn& c : columns) std::printf(" | %22.2f", c.h_task);
  std::printf("\n%-16s", "I task (median)");
  for (const ClockColumn& c : columns) std::printf(" | %22.2f", c.i_task);
  std::printf(
      "\n(H task: a program's first task of H, 'H ready' to 'H 1st task'; I task likewise)\n");
}

// The variants timed after each shape, as the flags ask for them.
struct Variants {
  // --ahead, --stages, --routed-chunks, --latent-rows, --front-parts
  std::vector<int> aheads, stages, routed_chunks, latent_rows, prefetch_steps, l2_fetches,
      gemv_steps, front_parts, expert_stages, routed_stages, expert_stage_steps, stage_fetches,
      task_loops, first_fetches;
  bool flip_x_ahead = false, byte_pairs = false, exact_decode = false, shift_placement = false,
       shared_early = false, chunk_handoff = false, codes_ahead = false, up_ahead = false;
  // --together: one more row with every variant above at once (a list's first value)
  bool together = false;
};

// A comma-separated list of counts for `flag`, each from `lo` to `hi`, appended to `out`; false,
// with the message on stderr, at the first that is not.
bool parse_counts(const char* flag, const char* text, int lo, int hi, std::vector<int>& out) {
  const std::vector<std::string> values = absl::StrSplit(text, ',', absl::SkipEmpty());
  for (const std::string& n : values) {
    const int count = std::atoi(n.c_str());
    if (count < lo || count > hi) {
      std::fprintf(stderr, "k2_bench: %s %s: expected %d to %d\n", flag, n.c_str(), lo, hi);
      return false;
    }
    out.push_back(count);
  }
  return true;
}

// The shape's build for the target, changed as each variant says.
std::vector<K2Build> variants_of(const K2Build& build, const Variants& v) {
  std::vector<K2Build> out;
  // The build with one field changed, appended where `wanted`.
  auto with = [&](bool wanted, auto K2Build::*field, auto value) {
    if (!wanted) return;
    out.push_back(build);
    out.back().*field = value;
  };
  for (int ahead : v.aheads) with(true, &K2Build::expert_ahead, ahead);
  for (int n : v.stages) with(true, &K2Build::num_stages, n);
  with(v.flip_x_ahead, &K2Build::expert_x_ahead, !build.expert_x_ahead);
  for (int n : v.prefetch_steps) with(true, &K2Build::expert_prefetch_steps, n);
  for (int n : v.l2_fetches) with(true, &K2Build::expert_l2_fetch, n);
  for (int n : v.gemv_steps) with(true, &K2Build::gemv_step, n);
  for (int n : v.routed_chunks) with(true, &K2Build::routed_chunks, n);
  with(v.byte_pairs, &K2Build::mxfp4_words, false);
  with(v.exact_decode, &K2Build::mxfp4_scale_bias, 0);
  with(v.shift_placement, &K2Build::mxfp4_shift_placement, true);
  for (int n : v.latent_rows) with(true, &K2Build::latent_rows, n);
  for (int n : v.front_parts) with(true, &K2Build::front_parts, n);
  for (int n : v.expert_stages) with(true, &K2Build::expert_stages, n);
  for (int step : v.expert_stage_steps) {
    std::vector<int> counts = v.expert_stages;
    if (counts.empty()) counts.push_back(build.expert_stages != 0 ? build.expert_stages : 4);
    for (int n : counts) {
      out.push_back(build);
      out.back().expert_stages = n;
      out.back().expert_stage_steps = step;
    }
  }
  for (int n : v.routed_stages) with(true, &K2Build::routed_stages, n);
  with(v.codes_ahead, &K2Build::expert_codes_ahead, true);
  for (int n : v.stage_fetches) with(true, &K2Build::expert_stage_fetch, n);
  for (int n : v.first_fetches) with(true, &K2Build::expert_first_fetch, n);
  with(v.up_ahead, &K2Build::up_ahead, true);
  for (int n : v.task_loops) {
    out.push_back(build);
    out.back().expert_task_loop = n;
    if (build.expert_stages == 0)
      out.back().expert_stages = v.expert_stages.empty() ? 4 : v.expert_stages.front();
  }
  with(v.shared_early, &K2Build::shared_early, true);
  with(v.chunk_handoff, &K2Build::chunk_handoff, true);
  if (v.together && out.size() > 1) {
    K2Build all = build;
    for (const K2Build& one : out) {  // each variant changed one field: take every change
      auto take = [&](auto K2Build::*field) {
        if (one.*field != build.*field && all.*field == build.*field) all.*field = one.*field;
      };
      take(&K2Build::expert_ahead);
      take(&K2Build::num_stages);
      take(&K2Build::expert_x_ahead);
      take(&K2Build::expert_prefetch_steps);
      take(&K2Build::expert_l2_fetch);
      take(&K2Build::gemv_step);
      take(&K2Build::routed_chunks);
      take(&K2Build::mxfp4_words);
      take(&K2Build::mxfp4_scale_bias);
      take(&K2Build::mxfp4_shift_placement);
      take(&K2Build::latent_rows);
      take(&K2Build::front_parts);
      take(&K2Build::expert_stages);
      take(&K2Build::expert_stage_steps);
      take(&K2Build::expert_codes_ahead);
      take(&K2Build::expert_stage_fetch);
      take(&K2Build::expert_task_loop);
      take(&K2Build::expert_first_fetch);
      take(&K2Build::up_ahead);
      take(&K2Build::routed_stages);
      take(&K2Build::shared_early);
      take(&K2Build::chunk_handoff);
    }
    out.push_back(all);
  }
  return out;
}

// The shape's stage clock build for the target (k2_for_target shapes a clock build its own way).
K2Build clock_build(K2Build build, const dsl::Target& target) {
  build.stage_clock = true;
  return k2_for_target(build, target);
}

// The --together build's stage clock build: every variant's change on the shape's clock build (not
// on the plain build with the clock added, which at 4 tokens would keep the L2 prefetch that
// k2_for_target leaves out of a clock build there, where it spills).
K2Build together_clock_build(const K2Build& build, const dsl::Target& target,
                             const Variants& variants) {
  return variants_of(clock_build(build, target), variants).back();
}

// Every build a run times, in its order: per shape the clock build (with --clock), the build as
// the target takes it, then its variants.
std::vector<K2Build> timed_builds(const model::ModelConfig& config, const model::RankDims& dims,
                                  const dsl::Target& target, bool clock, const Variants& variants) {
  std::vector<K2Build> out;
  for (int tokens : {4, 8, 16}) {
    absl::StatusOr<K2Build> build =
        k2_build(config, dims, kLayer, static_cast<int>(dims.kda_projection), tokens);
    if (!build.ok()) continue;
    const K2Build for_target = k2_for_target(*build, target);
    if (clock) out.push_back(clock_build(*build, target));
    out.push_back(for_target);
    const std::vector<K2Build> each = variants_of(for_target, variants);
    for (const K2Build& v : each) out.push_back(v);
    if (clock && variants.together && each.size() > 1) {
      out.push_back(together_clock_build(*build, target, variants));
    }
  }
  return out;
}

int run(int iterations, bool clock, const std::string& json, const Variants& variants,
        L2Flush flush) {
  runtime::DiscoveryOptions options;
  options.include_cpu = false;
  runtime::Discovery found = runtime::discover_devices(options);
  if (found.devices.empty()) {
    const std::string reason = found.missing.empty() ? "" : found.missing.front().reason;
    std::printf("k2_bench: no GPU%s%s\n", reason.empty() ? "" : ": ", reason.c_str());
    if (!json.empty()) {
      write_json_document("k2_bench", json,
                          no_gpu_json_header("no GPU" + (reason.empty() ? "" : ": " + reason)), {});
    }
    return 0;
  }
  runtime::Device& device = *found.devices.front();
  absl::StatusOr<runtime::Stream> stream = device.create_stream();
  absl::StatusOr<Timing> copy =
      stream.ok() ? copy_floor(device, *stream, iterations) : stream.status();
  if (!copy.ok()) {
    std::fprintf(stderr, "k2_bench: %s\n", copy.status().ToString().c_str());
    return 1;
  }
  const double bandwidth = copy_bandwidth(*copy);
  std::printf(
      "k2_bench on %s, %d programs; copy floor: %.1f GB/s (1 GiB D2D copy, best of %d); median of "
      "%d; %s\n",
      device.info().name.c_str(), device.info().compute_units, bandwidth / 1e9, iterations,
      iterations, l2_flush_description(flush).c_str());
  std::printf("%-72s %8s %8s %9s %9s %9s %6s\n", "build (K3 TP8 rank 0, layer 13)", "experts", "MB",
              "median us", "best us", "floor us", "ratio");
  model::ModelConfig config = *model::load_config("k3");
  model::RankDims dims = *model::rank_dims(config, 8, 0);
  int status = 0;
  std::vector<dsl::Program> programs;
  for (const K2Build& b : timed_builds(config, dims, device.info().target, clock, variants)) {
    programs.push_back(k2_program(b));
  }
  precompile(programs, device.info().target);
  std::vector<ClockColumn> columns;
  std::vector<ShapeResult> results;
  for (int tokens : {4, 8, 16}) {
    absl::StatusOr<K2Build> build =
        k2_build(config, dims, kLayer, static_cast<int>(dims.kda_projection), tokens);
    if (clock && build.ok()) {
      const K2Build clocked = clock_build(*build, device.info().target);
      absl::StatusOr<Result> clocked_result = time_k2(device, *stream, clocked, 3, flush);
      if (clocked_result.ok()) {
        columns.push_back(clock_column("T " + std::to_string(tokens), tokens, *clocked_result));
      } else {
        std::fprintf(stderr, "k2_bench: %s\n", clocked_result.status().ToString().c_str());
        status = 1;
      }
    }
    absl::StatusOr<Result> result =
        build.ok() ? time_k2(device, *stream, k2_for_target(*build, device.info().target),
                             iterations, flush)
                   : build.status();
    if (!result.ok()) {
      std::fprintf(stderr, "k2_bench: %s\n", result.status().ToString().c_str());
      status = 1;
      continue;
    }
    const double us = result->timing.median_ms * 1e3, floor_us = result->bytes / bandwidth * 1e6;
    const K2Build for_target = k2_for_target(*build, device.info().target);
    print_row(k2_name(for_target), *result, bandwidth);
    results.push_back(ShapeResult{k2_name(for_target), tokens, result->distinct_experts,
                                  result->bytes, us, result->timing.best_ms * 1e3, floor_us,
                                  result->route, for_target.top_k});
    const std::vector<K2Build> each = variants_of(for_target, variants);
    for (const K2Build& built : each) {
      absl::StatusOr<Result> variant = time_k2(device, *stream, built, iterations, flush);
      if (!variant.ok()) {
        std::fprintf(stderr, "k2_bench: %s\n", variant.status().ToString().c_str());
        status = 1;
        continue;
      }
      print_row(k2_name(built), *variant, bandwidth);
    }
    if (clock && variants.together && each.size() > 1) {
      const K2Build clocked = together_clock_build(*build, device.info().target, variants);
      absl::StatusOr<Result> clocked_result = time_k2(device, *stream, clocked, 3, flush);
      if (clocked_result.ok()) {
        columns.push_back(
            clock_column("T " + std::to_string(tokens) + " all", tokens, *clocked_result));
      } else {
        std::fprintf(stderr, "k2_bench: %s\n", clocked_result.status().ToString().c_str());
        status = 1;
      }
    }
  }
  print_clock(columns);
  if (!json.empty()) {
    std::vector<std::string> shapes;
    for (const ShapeResult& r : results) shapes.push_back(shape_json(r));
    if (!write_json_document("k2_bench", json,
                             gpu_json_header(device.info(), iterations, bandwidth, flush),
                             shapes)) {
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
  bool clock = false;
  std::string json;
  monotile::kernels::k3::Variants variants;
  monotile::kernels::k3::L2Flush flush = monotile::kernels::k3::L2Flush::kRead;
  const char* usage =
      "usage: k2_bench [--iterations N] [--clock] [--json FILE] [--flush read|write] [--ahead "
      "N[,N...]] [--stages "
      "N[,N...]] "
      "[--flip-x-ahead] [--prefetch-steps N[,N...]] [--l2-fetch N[,N...]] [--byte-pairs] "
      "[--exact-decode] [--shift-placement] [--gemv-step N[,N...]] "
      "[--routed-chunks N[,N...]] "
      "[--latent-rows N[,N...]] [--front-parts N[,N...]] [--expert-stages N[,N...]] "
      "[--expert-stage-steps N[,N...]] [--expert-codes-ahead] [--expert-stage-fetch N[,N...]] "
      "[--expert-task-loop N[,N...]] [--expert-first-fetch N[,N...]] [--up-ahead] "
      "[--routed-stages N[,N...]] [--shared-early] [--chunk-handoff] "
      "[--together]\n";
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--iterations" && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else if (std::string(argv[i]) == "--clock") {
      clock = true;
    } else if (std::string(argv[i]) == "--flush" && i + 1 < argc) {
      const std::optional<monotile::kernels::k3::L2Flush> mode =
          monotile::kernels::k3::parse_flush_option("k2_bench", argv[++i]);
      if (!mode) return 2;
      flush = *mode;
    } else if (std::string(argv[i]) == "--json" && i + 1 < argc) {
      json = argv[++i];
    } else if (std::string(argv[i]) == "--ahead" && i + 1 < argc) {
      if (!monotile::kernels::k3::parse_counts(
              "--ahead", argv[++i], 1, monotile::kernels::k3::kMxfp4MaxAhead, variants.aheads)) {
        return 2;
      }
    } else if (std::string(argv[i]) == "--routed-chunks" && i + 1 < argc) {
      if (!monotile::kernels::k3::parse_counts("--routed-chunks", argv[++i], 1, 256,
                                               variants.routed_chunks))
        return 2;
    } else if (std::string(argv[i]) == "--stages" && i + 1 < argc) {
      if (!monotile::kernels::k3::parse_counts("--stages", argv[++i], 2, 4, variants.stages))
        return 2;
    } else if (std::string(argv[i]) == "--flip-x-ahead") {
      variants.flip_x_ahead = true;
    } else if (std::string(argv[i]) == "--prefetch-steps" && i + 1 < argc) {
      if (!monotile::kernels::k3::parse_counts("--prefetch-steps", argv[++i], 0, 64,
                                               variants.prefetch_steps))
        return 2;
    } else if (std::string(argv[i]) == "--l2-fetch" && i + 1 < argc) {
      if (!monotile::kernels::k3::parse_counts("--l2-fetch", argv[++i], 64, 256,
                                               variants.l2_fetches))
        return 2;
    } else if (std::string(argv[i]) == "--byte-pairs") {
      variants.byte_pairs = true;
    } else if (std::string(argv[i]) == "--exact-decode") {
      variants.exact_decode = true;
    } else if (std::string(argv[i]) == "--shift-placement") {
      variants.shift_placement = true;
    } else if (std::string(argv[i]) == "--gemv-step" && i + 1 < argc) {
      if (!monotile::kernels::k3::parse_counts("--gemv-step", argv[++i], 128, 1024,
                                               variants.gemv_steps))
        return 2;
    } else if (std::string(argv[i]) == "--latent-rows" && i + 1 < argc) {
      if (!monotile::kernels::k3::parse_counts("--latent-rows", argv[++i], 16, 128,
                                               variants.latent_rows))
        return 2;
    } else if (std::string(argv[i]) == "--expert-stages" && i + 1 < argc) {
      if (!monotile::kernels::k3::parse_counts("--expert-stages", argv[++i], 2,
                                               monotile::dsl::kMaxLoadStages,
                                               variants.expert_stages))
        return 2;
    } else if (std::string(argv[i]) == "--expert-stage-steps" && i + 1 < argc) {
      if (!monotile::kernels::k3::parse_counts("--expert-stage-steps", argv[++i], 1,
                                               monotile::kernels::k3::kMxfp4MaxStageSteps,
                                               variants.expert_stage_steps))
        return 2;
    } else if (std::string(argv[i]) == "--expert-codes-ahead") {
      variants.codes_ahead = true;
    } else if (std::string(argv[i]) == "--up-ahead") {
      variants.up_ahead = true;
    } else if (std::string(argv[i]) == "--expert-first-fetch" && i + 1 < argc) {
      if (!monotile::kernels::k3::parse_counts("--expert-first-fetch", argv[++i], 1, 64,
                                               variants.first_fetches))
        return 2;
    } else if (std::string(argv[i]) == "--expert-task-loop" && i + 1 < argc) {
      if (!monotile::kernels::k3::parse_counts("--expert-task-loop", argv[++i], 1,
                                               monotile::kernels::k3::kMaxLoopedTasks,
                                               variants.task_loops))
        return 2;
    } else if (std::string(argv[i]) == "--expert-stage-fetch" && i + 1 < argc) {
      if (!monotile::kernels::k3::parse_counts("--expert-stage-fetch", argv[++i], 64, 256,
                                               variants.stage_fetches))
        return 2;
    } else if (std::string(argv[i]) == "--shared-early") {
      variants.shared_early = true;
    } else if (std::string(argv[i]) == "--chunk-handoff") {
      variants.chunk_handoff = true;

    } else if (std::string(argv[i]) == "--routed-stages" && i + 1 < argc) {
      if (!monotile::kernels::k3::parse_counts("--routed-stages", argv[++i], 2,
                                               monotile::dsl::kMaxLoadStages,
                                               variants.routed_stages))
        return 2;
    } else if (std::string(argv[i]) == "--front-parts" && i + 1 < argc) {
      if (!monotile::kernels::k3::parse_counts("--front-parts", argv[++i], 1, 14,
                                               variants.front_parts))
        return 2;
    } else if (std::string(argv[i]) == "--together") {
      variants.together = true;
    } else {
      std::fprintf(stderr, "%s", usage);
      return 2;
    }
  }
  return monotile::kernels::k3::run(std::max(iterations, 3), clock, json, variants, flush);
}
