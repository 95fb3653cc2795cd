// mxfp4_bench: the MXFP4 GEMV of K2's routed experts (mxfp4_gemv.h) alone, against the HBM floor
// measured in the same run. K2 runs it inside one persistent launch whose other stages hold over
// 200 registers a thread, so one program a multiprocessor; alone it shows what the GEMV itself
// reaches and what the exact decode, an L2 prefetch some steps past the loads, two programs a unit
// (more warps to issue from), 16 token rows or three steps ahead change.
// Shapes: "w13" is stage H's (the gate and up rows of `experts` chosen experts as one matrix of
// experts x 768 rows over K = 3584, K3 TP 8), "w2" stage I's (experts x 3584 rows over K = 384).
// Both run mxfp4_gemv_rows's loop, a GEMV a task; stage I runs the same K step inside
// mxfp4_gemv_sum, which this does not time.
// Each launch follows a 256 MiB read (cold L2, clean lines, as a decode step leaves it; l2_flush.h;
// --flush write: a memset, dirty lines, this benchmark's flush before). Without a GPU it says why
// and exits 0.
// --stage-steps N[,N...]: first, K2's staged w13 (4 and 8 tokens) at 3, 4 and 5 stages, each stage
// copying N K steps (Mxfp4Gemv::stage_steps: 2 copies 128 bytes of a row a stage, a whole line, and
// twice the weight bytes in flight of 1; 4 copies 256), each beside the same stages copying one
// step.
// --codes-ahead: first (with --stage-steps, beside each of its rows), the same staged rows with
// each iteration's scale codes loaded by the iteration before (Mxfp4Gemv::codes_ahead; column
// "ca").
// --stage-fetch N: beside each of those staged rows, the same with L2 fetching N bytes (64, 128 or
// 256) around each copy of the weights (Mxfp4Gemv::l2_fetch on a staged loop; column "l2f").
// --task-loop: after each of those rows with the codes ahead (all of them without --codes-ahead),
// its last form (with the fetch where asked) again with each program's tasks as one staged loop,
// the copies running on across the tasks' boundaries (mxfp4_gemv_tasks; column "tl").
// --stage-counts N[,N...]: those rows at these stage counts (2 to 8) instead of 3, 4 and 5.
// --tokens N[,N...]: those rows at these token counts (1 to 8) instead of 4 and 8.
// --staged-only: those rows alone, each token count's first beside K2's own w13 at that count (the
// register pipeline, 2 steps ahead, x with the weights) and the same with L2 fetching 256 bytes
// around each load, without the usual table after them.
// usage: mxfp4_bench [--iterations N] [--flush read|write] [--stage-steps N[,N...]] [--codes-ahead]
//                    [--stage-fetch N] [--task-loop] [--stage-counts N[,N...]] [--tokens N[,N...]]
//                    [--staged-only]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "dsl/memory.h"
#include "jit/jit.h"
#include "jit/program_build.h"
#include "kernels/k3/bench_timing.h"
#include "kernels/k3/l2_flush.h"
#include "kernels/k3/mxfp4_gemv.h"
#include "runtime/discovery.h"
#include "runtime/kernel.h"
#include "support/status_macros.h"

namespace monotile::kernels::k3 {
namespace {

constexpr int kExperts = 60;  // K2's distinct experts at T 4 in k2_bench's run

struct Shape {
  const char* name;
  int64_t n, k;
  int tokens, step, programs_per_unit, num_warps;
  int ahead = 2;
  bool pairs = true;      // Mxfp4Gemv::pairs: a byte decoded into one word of two bf16 (K2's)
  bool x_padded = false;  // Mxfp4Gemv::x_padded: x read without a mask (K2's)
  int token_rows = kMxfp4Tokens;  // Mxfp4Gemv::token_rows (K2's on NVIDIA up to 8 tokens: 8)
  bool x_ahead = false;  // Mxfp4Gemv::x_ahead: x loaded with the weights, steps ahead (K2's)
  bool words = true;     // with pairs, Mxfp4Gemv::words: four bytes decoded at once (K2's)
  // With words, Mxfp4Gemv::scale_bias (K2's): one multiply a word.
  int scale_bias = kMxfp4ScaleBias;
  int prefetch_steps = 0;  // Mxfp4Gemv::prefetch_steps: L2 asked for the weights this many steps on
  int l2_fetch = 0;        // Mxfp4Gemv::l2_fetch: bytes L2 fetches around each weight load
  int stages = 0;  // Mxfp4Gemv::stages: words and x through shared memory, stages - 1 steps ahead
  // With words, Mxfp4Gemv::placement: K2's two-copy multiply, or the two shifts a word before it.
  dsl::Mxfp4Placement placement = dsl::Mxfp4Placement::kCopies;
  int stage_steps = 1;       // Mxfp4Gemv::stage_steps: K steps each shared-memory stage copies
  bool codes_ahead = false;  // Mxfp4Gemv::codes_ahead: a staged iteration's codes loaded before it
  bool task_loop = false;    // a program's tasks as one staged loop (mxfp4_gemv_tasks)
};

// The decode's name in the table: "word1" (Mxfp4Gemv::words at one multiply a word: scale_bias),
// "word" (words, the exact decode's two), "byte" (pairs) or "f32"; a word decode ending "s" puts
// the nibbles in place by two shifts a word (Mxfp4Placement::kShifts).
const char* decode_name(const Shape& s) {
  const bool shifts = s.placement == dsl::Mxfp4Placement::kShifts;
  if (!s.pairs) return "f32";
  if (!s.words) return "byte";
  if (s.scale_bias != 0) return shifts ? "word1s" : "word1";
  return shifts ? "words" : "word";
}

// Weights, scales, activations and the accumulators written (token_rows rows of f32).
int64_t moved_bytes(const Shape& s) {
  return s.n * s.k / 2 + s.n * s.k / 32 + int64_t{s.tokens} * s.k * 2 +
         int64_t{s.token_rows} * s.n * 4;
}

absl::StatusOr<Timing> time_gemv(runtime::Device& device, runtime::Stream& stream, const Shape& s,
                                 int iterations, L2Flush flush) {
  MT_ASSIGN_OR_RETURN(
      jit::ProgramBuild made,
      jit::make_build(
          mxfp4_gemv_program(s.n, s.k, s.tokens, s.num_warps, s.step, s.ahead, s.pairs, s.x_padded,
                             s.token_rows, s.x_ahead, s.pairs && s.words,
                             s.pairs && s.words ? s.scale_bias : 0, s.prefetch_steps, s.l2_fetch,
                             s.stages, s.placement, s.stage_steps, s.codes_ahead, s.task_loop),
          device.info().target));
  MT_ASSIGN_OR_RETURN(jit::CompiledBuild compiled,
                      jit::Jit::process_default().compile_build(made.build));
  MT_ASSIGN_OR_RETURN(runtime::Kernel kernel,
                      runtime::Kernel::load(device, compiled, std::move(made.params)));
  // The values do not change the time (the decode has no branches): a fixed byte pattern, scale
  // code 122 (2^-5), activations of 1.0 (0x3F80 in both halves of each word).
  MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer packed, device.allocate(s.n * s.k / 2));
  MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer scales, device.allocate(s.n * s.k / 32));
  // kMxfp4Tokens rows, as a padded x is read (rows past the tokens hold 1.0 too: no time depends on
  // it).
  MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer x, device.allocate(int64_t{kMxfp4Tokens} * s.k * 2));
  MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer out, device.allocate(int64_t{kMxfp4Tokens} * s.n * 4));
  MT_ASSIGN_OR_RETURN(L2Flusher flusher, L2Flusher::create(device, flush));
  MT_RETURN_IF_ERROR(device.fill_bytes(packed.address(), 0x5A, s.n * s.k / 2));
  MT_RETURN_IF_ERROR(device.fill_bytes(scales.address(), 122, s.n * s.k / 32));
  std::vector<uint16_t> ones(static_cast<size_t>(kMxfp4Tokens) * s.k, 0x3F80);
  MT_RETURN_IF_ERROR(device.copy_to_device(x.address(), ones.data(), ones.size() * 2));
  using dsl::ScalarType;
  const std::vector<runtime::KernelArgument> args = {
      runtime::KernelArgument::pointer(reinterpret_cast<const void*>(packed.address()),
                                       ScalarType::kU8),
      runtime::KernelArgument::pointer(reinterpret_cast<const void*>(scales.address()),
                                       ScalarType::kU8),
      runtime::KernelArgument::pointer(reinterpret_cast<const void*>(x.address()),
                                       ScalarType::kI32),
      runtime::KernelArgument::pointer(reinterpret_cast<const void*>(out.address()),
                                       ScalarType::kF32)};
  const auto programs = static_cast<uint32_t>(device.info().compute_units * s.programs_per_unit);
  std::vector<float> times;
  for (int i = 0; i < iterations + 2; ++i) {
    MT_RETURN_IF_ERROR(flusher.run(device, stream, i));
    MT_ASSIGN_OR_RETURN(runtime::Event start, device.create_event());
    MT_ASSIGN_OR_RETURN(runtime::Event end, device.create_event());
    MT_RETURN_IF_ERROR(device.record(start, stream));
    MT_RETURN_IF_ERROR(kernel.launch({programs, 1, 1}, args, stream));
    MT_RETURN_IF_ERROR(device.record(end, stream));
    MT_RETURN_IF_ERROR(device.synchronize(end));
    MT_ASSIGN_OR_RETURN(float ms, device.elapsed_ms(start, end));
    if (i >= 2) times.push_back(ms);
  }
  return summarize(times);
}

// The staged rows asked for (--stage-steps, --codes-ahead, --stage-fetch, --task-loop,
// --stage-counts, --tokens, --staged-only).
struct StagedRows {
  std::vector<int> stage_steps;  // besides 1
  bool codes_ahead = false;
  int fetch = 0;
  std::vector<int> stage_counts{3, 4, 5};
  std::vector<int> tokens{4, 8};
  bool task_loop = false;
  bool only = false;
};

int run(int iterations, L2Flush flush, const StagedRows& asked) {
  runtime::DiscoveryOptions options;
  options.include_cpu = false;
  runtime::Discovery found = runtime::discover_devices(options);
  if (found.devices.empty()) {
    const std::string reason = found.missing.empty() ? "" : found.missing.front().reason;
    std::printf("mxfp4_bench: no GPU%s%s\n", reason.empty() ? "" : ": ", reason.c_str());
    return 0;
  }
  runtime::Device& device = *found.devices.front();
  absl::StatusOr<runtime::Stream> stream = device.create_stream();
  absl::StatusOr<Timing> copy =
      stream.ok() ? copy_floor(device, *stream, iterations) : stream.status();
  if (!copy.ok()) {
    std::fprintf(stderr, "mxfp4_bench: %s\n", copy.status().ToString().c_str());
    return 1;
  }
  const double bandwidth = copy_bandwidth(*copy);
  std::printf(
      "mxfp4_bench on %s, %d units; copy floor: %.1f GB/s (1 GiB D2D copy, best of %d); median of "
      "%d; %s\n",
      device.info().name.c_str(), device.info().compute_units, bandwidth / 1e9, iterations,
      iterations, l2_flush_description(flush).c_str());
  std::printf(
      "%-5s %7s %5s %6s %5s %9s %5s %5s %6s %5s %4s %6s %3s %4s %3s %3s %3s %3s %8s %9s %9s %9s "
      "%6s\n",
      "shape", "n", "k", "tokens", "step", "programs", "warps", "ahead", "decode", "xpad", "rows",
      "xahead", "pf", "l2f", "st", "ss", "ca", "tl", "MB", "median us", "best us", "floor us",
      "ratio");
  const int64_t w13_rows = int64_t{kExperts} * 768, w2_rows = int64_t{kExperts} * 3584;
  // The words and x staged through shared memory (Mxfp4Gemv::stages): K2's w13 and w2 at 4 tokens.
  auto staged = [&](const char* name, int64_t n, int64_t k, int tokens, int rows, int stages,
                    int programs, int stage_steps = 1, bool codes = false) {
    Shape s{name, n,     k,    tokens,          128, programs, 8,     2, true, true,
            rows, false, true, kMxfp4ScaleBias, 0,   0,        stages};
    s.stage_steps = stage_steps;
    s.codes_ahead = codes;
    return s;
  };
  // --stage-steps' and --codes-ahead's rows: each count of stages copying one K step, then the
  // steps asked for, each without and with the codes ahead where asked, each without and with the
  // L2 fetch where asked.
  std::vector<Shape> shapes;
  if (!asked.stage_steps.empty() || asked.codes_ahead || asked.fetch != 0 || asked.task_loop) {
    std::vector<int> steps_list{1};
    for (int steps : asked.stage_steps) {
      if (steps != 1) steps_list.push_back(steps);
    }
    for (int tokens : asked.tokens) {
      if (asked.only) {
        // K2's own form at these tokens (T <= 8 on NVIDIA), plain and with L2 fetching 256 bytes.
        shapes.push_back({"w13", w13_rows, 3584, tokens, 128, 1, 8, 2, true, true, 8, true});
        shapes.push_back(shapes.back());
        shapes.back().l2_fetch = 256;
      }
      for (int stages : asked.stage_counts) {
        for (int steps : steps_list) {
          for (bool codes : {false, true}) {
            if (codes && !asked.codes_ahead) continue;
            shapes.push_back(staged("w13", w13_rows, 3584, tokens, 8, stages, 1, steps, codes));
            if (asked.fetch != 0) {
              shapes.push_back(shapes.back());
              shapes.back().l2_fetch = asked.fetch;
            }
            if (asked.task_loop && (codes || !asked.codes_ahead)) {
              shapes.push_back(shapes.back());
              shapes.back().task_loop = true;
            }
          }
        }
      }
    }
  }
  const std::vector<Shape> table = {
      staged("w13", w13_rows, 3584, 4, 8, 3, 1),
      staged("w13", w13_rows, 3584, 4, 8, 4, 1),
      staged("w13", w13_rows, 3584, 4, 8, 6, 1),
      staged("w13", w13_rows, 3584, 4, 8, 8, 1),
      staged("w13", w13_rows, 3584, 4, 8, 4, 2),
      staged("w13", w13_rows, 3584, 16, 16, 4, 1),
      staged("w2", w2_rows, 384, 4, 8, 3, 1),
      staged("w13", w13_rows, 3584, 4, 8, 8, 2),
      staged("w2", w2_rows, 384, 4, 8, 6, 1),
      // K2's experts as K2 builds them on NVIDIA at 4 and 8 tokens: x unmasked and loaded with the
      // weights two steps ahead, 8 token rows, one program of 8 warps a unit.
      {"w13", w13_rows, 3584, 4, 128, 1, 8, 2, true, true, 8, true},
      {"w13", w13_rows, 3584, 8, 128, 1, 8, 2, true, true, 8, true},
      {"w2", w2_rows, 384, 4, 128, 1, 8, 2, true, true, 8, true},
      // The same three and K2's staged w13 at 16 tokens with the nibbles put in place by two shifts
      // a word (the decode before the two-copy multiply), to time the two side by side.
      {"w13", w13_rows, 3584, 4, 128, 1, 8, 2, true, true, 8, true, true, kMxfp4ScaleBias, 0, 0, 0,
       dsl::Mxfp4Placement::kShifts},
      {"w13", w13_rows, 3584, 8, 128, 1, 8, 2, true, true, 8, true, true, kMxfp4ScaleBias, 0, 0, 0,
       dsl::Mxfp4Placement::kShifts},
      {"w2", w2_rows, 384, 4, 128, 1, 8, 2, true, true, 8, true, true, kMxfp4ScaleBias, 0, 0, 0,
       dsl::Mxfp4Placement::kShifts},
      {"w13", w13_rows, 3584, 16, 128, 1, 8, 2, true, true, 16, false, true, kMxfp4ScaleBias, 0, 0,
       4, dsl::Mxfp4Placement::kShifts},
      // The same at the exact decode's two multiplies a word (K2's until its scale bias).
      {"w13", w13_rows, 3584, 4, 128, 1, 8, 2, true, true, 8, true, true, 0},
      {"w2", w2_rows, 384, 4, 128, 1, 8, 2, true, true, 8, true, true, 0},
      // L2 asked for the weights 2, 4 or 8 steps past the loads: more of them in flight than the
      // registers' slots hold.
      {"w13", w13_rows, 3584, 4, 128, 1, 8, 2, true, true, 8, true, true, kMxfp4ScaleBias, 2},
      {"w13", w13_rows, 3584, 4, 128, 1, 8, 2, true, true, 8, true, true, kMxfp4ScaleBias, 4},
      {"w13", w13_rows, 3584, 4, 128, 1, 8, 2, true, true, 8, true, true, kMxfp4ScaleBias, 8},
      // L2 fetching 128 or 256 bytes around each weight load (a row's step is 64).
      {"w13", w13_rows, 3584, 4, 128, 1, 8, 2, true, true, 8, true, true, kMxfp4ScaleBias, 0, 128},
      {"w13", w13_rows, 3584, 4, 128, 1, 8, 2, true, true, 8, true, true, kMxfp4ScaleBias, 0, 256},
      {"w2", w2_rows, 384, 4, 128, 1, 8, 2, true, true, 8, true, true, kMxfp4ScaleBias, 0, 256},
      {"w13", w13_rows, 3584, 16, 128, 1, 8, 2, true, true, 16, true, true, kMxfp4ScaleBias, 0,
       256},
      {"w13", w13_rows, 3584, 4, 128, 1, 8, 3, true, true, 8, true, true, kMxfp4ScaleBias, 0, 256},
      {"w2", w2_rows, 384, 4, 128, 1, 8, 2, true, true, 8, true, true, kMxfp4ScaleBias, 2},
      {"w2", w2_rows, 384, 4, 128, 1, 8, 2, true, true, 8, true, true, kMxfp4ScaleBias, 4},
      {"w13", w13_rows, 3584, 16, 128, 1, 8, 2, true, true, 16, true, true, kMxfp4ScaleBias, 4},
      // Two programs a unit (16 warps an SM where the registers allow two): is one program's issue
      // rate, not the memory, what holds the GEMV?
      {"w13", w13_rows, 3584, 4, 128, 2, 8, 2, true, true, 8, true},
      {"w13", w13_rows, 3584, 4, 128, 2, 8, 2, true, true, 8},
      {"w2", w2_rows, 384, 4, 128, 2, 8, 2, true, true, 8, true},
      // 16 token rows (K2's at 9 to 16 tokens), x loaded ahead or not; three steps ahead.
      {"w13", w13_rows, 3584, 16, 128, 1, 8, 2, true, true, 16, true},
      {"w13", w13_rows, 3584, 16, 128, 1, 8, 2, true, true, 16},
      {"w13", w13_rows, 3584, 4, 128, 1, 8, 3, true, true, 8, true},
      {"w13", w13_rows, 3584, 4, 128, 1, 8, 3, true, true, 8, true, true, kMxfp4ScaleBias, 4},
  };
  if (!asked.only) shapes.insert(shapes.end(), table.begin(), table.end());
  int status = 0;
  for (const Shape& s : shapes) {
    absl::StatusOr<Timing> timing = time_gemv(device, *stream, s, iterations, flush);
    if (!timing.ok()) {
      std::fprintf(stderr, "mxfp4_bench: %s n %lld k %lld: %s\n", s.name,
                   static_cast<long long>(s.n), static_cast<long long>(s.k),
                   timing.status().ToString().c_str());
      status = 1;
      continue;
    }
    const int64_t bytes = moved_bytes(s);
    const double us = timing->median_ms * 1e3, floor_us = bytes / bandwidth * 1e6;
    std::printf(
        "%-5s %7lld %5lld %6d %5d %9d %5d %5d %6s %5s %4d %6s %3d %4d %3d %3d %3s %3s %8.2f %9.2f "
        "%9.2f "
        "%9.2f "
        "%6.3f\n",
        s.name, static_cast<long long>(s.n), static_cast<long long>(s.k), s.tokens, s.step,
        device.info().compute_units * s.programs_per_unit, s.num_warps, s.ahead, decode_name(s),
        s.x_padded ? "yes" : "no", s.token_rows, s.x_ahead ? "yes" : "no", s.prefetch_steps,
        s.l2_fetch, s.stages, s.stage_steps, s.codes_ahead ? "yes" : "no",
        s.task_loop ? "yes" : "no", bytes / 1e6, us, timing->best_ms * 1e3, floor_us,
        us / floor_us);
  }
  return status;
}

}  // namespace
}  // namespace monotile::kernels::k3

int main(int argc, char** argv) {
  // A row at a time: a run cut short by a time limit keeps the rows it printed.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  int iterations = 20;
  monotile::kernels::k3::StagedRows staged;
  monotile::kernels::k3::L2Flush flush = monotile::kernels::k3::L2Flush::kRead;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--iterations" && i + 1 < argc) {
      iterations = std::atoi(argv[++i]);
    } else if (std::string(argv[i]) == "--flush" && i + 1 < argc) {
      const std::optional<monotile::kernels::k3::L2Flush> mode =
          monotile::kernels::k3::parse_flush_option("mxfp4_bench", argv[++i]);
      if (!mode) return 2;
      flush = *mode;
    } else if (std::string(argv[i]) == "--stage-steps" && i + 1 < argc) {
      const std::vector<std::string> values = absl::StrSplit(argv[++i], ',', absl::SkipEmpty());
      for (const std::string& value : values) {
        const int steps = std::atoi(value.c_str());
        // K steps a stage copies over K2's w13 (K 3584: 28 steps of 128).
        if (steps != 1 && steps != 2 && steps != 4) {
          std::fprintf(
              stderr,
              "mxfp4_bench: --stage-steps %s: expected 1, 2 or 4 (dividing w13's 28 K steps)\n",
              value.c_str());
          return 2;
        }
        staged.stage_steps.push_back(steps);
      }
    } else if (std::string(argv[i]) == "--codes-ahead") {
      staged.codes_ahead = true;
    } else if (std::string(argv[i]) == "--stage-fetch" && i + 1 < argc) {
      staged.fetch = std::atoi(argv[++i]);
      if (staged.fetch != 64 && staged.fetch != 128 && staged.fetch != 256) {
        std::fprintf(stderr, "mxfp4_bench: --stage-fetch %s: expected 64, 128 or 256 bytes\n",
                     argv[i]);
        return 2;
      }
    } else if ((std::string(argv[i]) == "--stage-counts" || std::string(argv[i]) == "--tokens") &&
               i + 1 < argc) {
      const bool counts = std::string(argv[i]) == "--stage-counts";
      const int lo = counts ? 2 : 1, hi = counts ? monotile::dsl::kMaxLoadStages : 8;
      std::vector<int>& out = counts ? staged.stage_counts : staged.tokens;
      out.clear();
      const std::vector<std::string> values = absl::StrSplit(argv[i + 1], ',', absl::SkipEmpty());
      for (const std::string& value : values) {
        const int n = std::atoi(value.c_str());
        if (n < lo || n > hi) {
          std::fprintf(stderr, "mxfp4_bench: %s %s: expected %d to %d\n", argv[i], value.c_str(),
                       lo, hi);
          return 2;
        }
        out.push_back(n);
      }
      ++i;
    } else if (std::string(argv[i]) == "--task-loop") {
      staged.task_loop = true;
    } else if (std::string(argv[i]) == "--staged-only") {
      staged.only = true;
    } else {
      std::fprintf(
          stderr,
          "usage: mxfp4_bench [--iterations N] [--flush read|write] [--stage-steps "
          "N[,N...]] [--codes-ahead] [--stage-fetch N] [--task-loop] [--stage-counts N[,N...]] "
          "[--tokens N[,N...]] [--staged-only]\n");
      return 2;
    }
  }
  return monotile::kernels::k3::run(iterations, flush, staged);
}
