// The decode GEMV in the DSL. Bytes decide its speed: W (n k 2 bytes) is read once with 16-byte
// loads; x and y are small and stay in L2. FMA path: W is viewed as [block_n, block_k / 8, 8] so
// each thread's 8 contiguous bf16 (one 16-byte load) reduce inside the thread every step, and the
// per-row accumulators stay [block_n, block_k / 8] whatever m is; lanes meet once, after the loop.
#include "kernels/bench/gemv.h"

#include <algorithm>
#include <optional>
#include "support/source_location.h"
#include <utility>
#include <vector>

#include "dsl/dsl.h"

namespace monotile::kernels::bench {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

// One piece of the result: an f32 tile, its element offsets into an [m, n] row-major array, and
// the mask of its real rows (none when every row is real).
struct ResultPiece {
  Value tile;
  Value offsets;
  std::optional<Value> mask;
};

void store_masked(const Value& ptr, const Value& value, const std::optional<Value>& mask, AccessOptions options = {}) {
  if (mask) {
    store(ptr, value, *mask, options);
  } else {
    store(ptr, value, options);
  }
}

Value load_masked(const Value& ptr, const std::optional<Value>& mask, AccessOptions options = {}) {
  return mask ? load(ptr, *mask, options) : load(ptr, options);
}

std::optional<Value> both(const std::optional<Value>& a, const std::optional<Value>& b) {
  if (a && b) return *a & *b;
  return a ? a : b;
}

// Writes y, or with splits > 1 this program's partials; the last program to arrive on the row block
// (an acq_rel counter) sums the partials in split order, writes y and sets the counter back to 0.
void write_result(const std::vector<ResultPiece>& pieces, const Value& y, const std::optional<Value>& partials,
                  const std::optional<Value>& counters, int m, int n, int splits) {
  if (splits == 1) {
    for (const ResultPiece& piece : pieces) store_masked(y + piece.offsets, piece.tile.to(bf16), piece.mask);
    return;
  }
  const int64_t plane = int64_t{m} * n;
  auto mine = *partials + program_id(1).to(i64) * plane;
  for (const ResultPiece& piece : pieces) store_masked(mine + piece.offsets, piece.tile, piece.mask);
  // Every thread makes its partials visible at gpu scope, then one thread announces them all.
  fence(Order::acq_rel, Scope::gpu);
  barrier();
  auto counter = *counters + program_id(0);
  auto arrived = atomic_add(counter, 1, Scope::gpu, Order::acq_rel);
  if_(arrived == splits - 1, [&] {
    fence(Order::acquire, Scope::gpu);
    for (const ResultPiece& piece : pieces) {
      Value total = load_masked(*partials + piece.offsets, piece.mask, {.cache = Cache::global});
      for (int s = 1; s < splits; ++s) {
        total = total + load_masked(*partials + (int64_t{s} * plane) + piece.offsets, piece.mask, {.cache = Cache::global});
      }
      store_masked(y + piece.offsets, total.to(bf16), piece.mask);
    }
    store(counter, 0);
  });
}

// FMA path: per step, each thread loads 16 bytes of W per row it covers, multiplies by the same
// 8 elements of every x row (x is L1/L2-resident) and sums the 8 products in registers.
std::vector<ResultPiece> gemv_fma(const Value& x, const Value& weight, int m, int n, int k, const GemvConfig& config,
                                  const Value& rows, const Value& k_begin, int64_t k_split) {
  const int chunks = config.block_k / 8;
  // Offsets of one step's [chunks, 8] columns; W's view adds the row dim in front.
  auto step_cols = col(arange(0, chunks)) * 8 + row(arange(0, 8));
  auto w_rows = expand_dims(expand_dims(rows.to(i64) * k, 1), 2);
  auto w_step = [&](const Value& k0) { return weight + w_rows + expand_dims(k0 + step_cols, 0); };
  const AccessOptions streamed{.cache = config.streaming ? Cache::streaming : Cache::normal};
  auto k_end = k_begin + static_cast<int>(k_split);
  // With prefetch the loop carries the next step's W tile, loaded before this step's FMAs. The
  // last step's prefetch is clamped to the split's last tile (an L2 hit) rather than masked: a
  // masked load is a branch per 16 bytes, which keeps the compiler from issuing them together.
  std::vector<Operand> init;
  if (config.prefetch) init.emplace_back(load(w_step(k_begin), streamed));
  for (int i = 0; i < m; ++i) init.emplace_back(zeros({config.block_n, chunks}, f32));
  const int first_acc = config.prefetch ? 1 : 0;
  std::vector<Value> carried_out = detail::build_for(
      k_begin, k_end, config.block_k, init,
      [&](Value k0, const std::vector<Value>& carried) {
        std::vector<Value> next;
        Value w;
        if (config.prefetch) {
          auto k_next = minimum(k0 + config.block_k, k_end - config.block_k);
          next.push_back(load(w_step(k_next), streamed));
          w = carried[0].to(f32);
        } else {
          w = load(w_step(k0), streamed).to(f32);
        }
        auto cols = k0 + step_cols;
        for (int i = 0; i < m; ++i) {
          auto xi = load(x + int64_t{i} * k + cols).to(f32);
          next.push_back(carried[first_acc + i] + sum(w * expand_dims(xi, 0), 2));
        }
        return next;
      },
      SourceLocation::current());
  std::vector<Value> accs(carried_out.begin() + first_acc, carried_out.end());
  std::vector<ResultPiece> pieces;
  for (int i = 0; i < m; ++i) pieces.push_back({sum(accs[i], 1), rows + i * n, std::nullopt});
  return pieces;
}

// Matrix-unit path: x's rows padded with masked (zero) rows to a multiple of 16, the unit's
// smallest M; only the real rows are written.
std::vector<ResultPiece> gemv_dot(const Value& x, const Value& weight, int m, int n, int k, const GemvConfig& config,
                                  const Value& rows, const std::optional<Value>& row_ok, const Value& k_begin,
                                  int64_t k_split) {
  const int m_tile = std::max(16, (m + 15) / 16 * 16);
  auto ms = arange(0, m_tile);
  std::optional<Value> m_ok;
  if (m_tile != m) m_ok = col(ms) < m;
  auto acc = range(k_begin, k_begin + k_split, config.block_k, zeros({m_tile, config.block_n}, f32),
                   [&](Value k0, Value acc) {
                     auto ks = k0 + arange(0, config.block_k);
                     std::optional<Value> w_ok;
                     if (row_ok) w_ok = col(*row_ok);
                     auto w = load_masked(weight + col(rows).to(i64) * k + row(ks), w_ok);
                     auto a = load_masked(x + col(ms) * k + row(ks), m_ok);
                     return dot(a, trans(w), acc);
                   });
  std::optional<Value> out_ok;
  if (row_ok) out_ok = row(*row_ok);
  return {ResultPiece{acc, col(ms) * n + row(rows), both(m_ok, out_ok)}};
}

// Matrix-unit path with the operands swapped: y^T = W x^T, so W's rows fill the unit's M (16)
// and x's rows, padded to 8, its N; a warp per 16 rows of W. Only the real rows are written.
std::vector<ResultPiece> gemv_dot_swapped(const Value& x, const Value& weight, int m, int n, int k,
                                          const GemvConfig& config, const Value& rows,
                                          const std::optional<Value>& row_ok, const Value& k_begin, int64_t k_split) {
  const int m_pad = std::max(8, (m + 7) / 8 * 8);
  auto ms = arange(0, m_pad);
  std::optional<Value> m_ok;
  if (m_pad != m) m_ok = col(ms) < m;
  auto acc = range(k_begin, k_begin + k_split, config.block_k, zeros({config.block_n, m_pad}, f32),
                   [&](Value k0, Value acc) {
                     auto ks = k0 + arange(0, config.block_k);
                     std::optional<Value> w_ok;
                     if (row_ok) w_ok = col(*row_ok);
                     auto w = load_masked(weight + col(rows).to(i64) * k + row(ks), w_ok);
                     auto xs = load_masked(x + col(ms) * k + row(ks), m_ok);
                     return dot(w, trans(xs), acc);
                   });
  std::optional<Value> out_ok, rows_out_ok;
  if (m_ok) out_ok = row(ms) < m;
  if (row_ok) rows_out_ok = col(*row_ok);
  return {ResultPiece{acc, row(ms) * n + col(rows), both(out_ok, rows_out_ok)}};
}

}  // namespace

namespace {

// The fewest splits (a divisor of the steps) that give the GPU `target` programs, with the
// partials' traffic (8 s m n bytes) at most an eighth of W's (2 n k bytes).
int choose_splits(int m, int n, int k, int block_n, int block_k, int target) {
  const int row_blocks = (n + block_n - 1) / block_n;
  const int steps = k / block_k;
  int splits = 1;
  for (int s = 2; s <= steps; ++s) {
    if (row_blocks * splits >= target || int64_t{32} * s * m > k) break;
    if (steps % s == 0) splits = s;
  }
  return splits;
}

// The H200 as the matrix paths see it: 132 SMs of 228 KiB shared memory, 1 KiB of it taken per
// resident block; the pipeline gives a loop 4 stages, else 3, else 2, within 227 - 16 KiB
// (dsl/lower/pipeline.cpp), each stage one tile of W and one of x, rounded to 128 bytes, after a
// 128-byte line of other shared memory (the split-K counter's broadcast).
constexpr int kSms = 132;
constexpr int64_t kSharedPerSm = 228 * 1024;
constexpr int64_t kSharedPerBlockReserved = 1024;
constexpr int64_t kPipelineBudget = (227 - 16) * 1024;
constexpr int64_t kOtherShared = 128;
constexpr int kMaxWarpsPerSm = 64;

int64_t round_to_line(int64_t bytes) { return (bytes + 127) / 128 * 128; }

// Rows of x the unit sees: padded to its N (8) with W as A, to its M (16) with x as A.
int x_tile_rows(int m, const GemvConfig& config) {
  return config.swap_operands ? std::max(8, (m + 7) / 8 * 8) : std::max(16, (m + 15) / 16 * 16);
}

// Shared memory of the pipelined K loop of a matrix-unit configuration.
int64_t pipeline_bytes(int m, const GemvConfig& config) {
  const int64_t stage = round_to_line(int64_t{config.block_n} * config.block_k * 2) +
                        round_to_line(int64_t{x_tile_rows(m, config)} * config.block_k * 2);
  int stages = 4;
  while (stages > 2 && stages * stage > kPipelineBudget) --stages;
  return kOtherShared + stages * stage;
}

// How many programs of a matrix-unit configuration the GPU holds at once (shared memory and
// warps; registers stay under both limits for every configuration here, the compile test checks).
int resident_programs(int m, const GemvConfig& config) {
  const int64_t by_shared = kSharedPerSm / (pipeline_bytes(m, config) + kSharedPerBlockReserved);
  const int64_t by_warps = kMaxWarpsPerSm / config.num_warps;
  return static_cast<int>(std::min(by_shared, by_warps)) * kSms;
}

int programs(int n, const GemvConfig& config) {
  return (n + config.block_n - 1) / config.block_n * config.splits;
}

}  // namespace

std::string gemv_label(const GemvConfig& config) {
  std::string label = !config.matrix_unit ? "fma" : config.swap_operands ? "wa" : "xa";
  label += "_bn" + std::to_string(config.block_n) + "_w" + std::to_string(config.num_warps) + "_bk" +
           std::to_string(config.block_k) + "_s" + std::to_string(config.splits);
  if (!config.matrix_unit && config.prefetch) label += "_pf";
  return label;
}

GemvConfig gemv_config(int m, int n, int k) {
  // Rules from the H200 runs (docs/perf.md; run A at 901d6b3, the labelled variants beside each
  // row). What decides: W's bytes per row per step (long contiguous runs stream best: at m = 8,
  // K = 7168 a 256-wide step 23.60 us, 128 24.41, 64 25.88 with 4 splits), every program
  // resident at once (a second wave costs 15-40%), and x's L2 -> SM traffic, m / block_n of W's.
  GemvConfig config;
  if (m <= kGemvFmaMaxRows) {
    // FMA rows (m = 1: 93% of the floor at K = 7168 in f3fe6b4's run; m = 2 unmeasured, half
    // of m = 4's FMA work per byte of W). m = 4 left them: W as the matrix unit's A operand
    // measured faster on every shape (23.22 / 7.69 / 5.49 / 15.77 us against 24.32 / 8.73 /
    // 6.92 / 17.38). A 512-wide step (16 KB of W per program in flight) with the next one
    // prefetched, where each program then still makes a few steps; else 256 without prefetch.
    const bool wide = k % 512 == 0 && (m == 1 || k >= 3584);
    config.block_k = wide ? 512 : 256;
    config.prefetch = wide;
    config.splits = choose_splits(m, n, k, config.block_n, config.block_k, kGemvTargetPrograms);
    return config;
  }
  config.matrix_unit = true;
  config.prefetch = false;
  const bool long_rows = k >= 4096;
  if (n <= 1024) {
    // Narrow W (48 row blocks of 16) is latency-bound: W as A, a warp per 16 rows, 128-wide
    // steps split so that each program makes 4 (336 programs): 5.49 / 5.49 / 5.88 us at m = 4 /
    // 8 / 16 against 6.92 (FMA) / 6.63 / 6.40 (x as A). Above m = 16 x as A, padded to the
    // unit's 16 rows, stays: m = 32 with 256-wide steps 7.37 us, m = 64 with 4 splits 7.90 (the
    // W-as-A versions 7.98 and 12.74).
    if (m <= 16) {
      config.swap_operands = true;
      config.num_warps = 1;
      config.block_k = 128;
      config.splits = std::max(1, k / config.block_k / 4);
      while (k % (config.block_k * config.splits) != 0) --config.splits;
      return config;
    }
    config.block_k = m <= 32 ? 256 : 128;
    config.splits = m <= 32 ? choose_splits(m, n, k, config.block_n, config.block_k, kGemvTargetPrograms) : 4;
    return config;
  }
  if (m <= 16 || (m <= 32 && !long_rows)) {
    // W as A. Long rows: a warp per 16 rows, unsplit, the widest step that leaves every program
    // resident (m = 4 / 8 / 16, K = 7168: 23.22 / 23.60 / 23.94 us, 0.90 of the floor; 128-wide
    // steps 24.32 / 24.41 / 25.25, 2 splits of 32 rows 25.10 / 25.64). Short rows (a few steps
    // per program): 32 rows on 2 warps, 128-wide steps, unsplit, which all fit (224 and 384
    // programs): K = 1536 7.67 / 8.11 / 8.49 us at m = 8 / 16 / 32 against 7.78 / 8.25 / 8.58
    // with 16 rows; K = 2304 15.69 / 16.34 / 17.14 against 15.74 / 16.54 / 17.15.
    config.swap_operands = true;
    config.splits = 1;
    if (!long_rows) {
      config.block_n = 32;
      config.num_warps = 2;
      config.block_k = 128;
      return config;
    }
    config.num_warps = 1;
    config.block_k = 256;
    while (config.block_k > 64 && programs(n, config) > resident_programs(m, config)) config.block_k /= 2;
    return config;
  }
  if (m <= 32) {
    // m = 32 on long rows: x as A with 32 rows of W on 4 warps and 2 splits (394 programs,
    // resident): 26.97 us against 29.23 for W as A with 64-wide steps, 28.54 with 16 rows.
    config.block_n = 32;
    config.block_k = 128;
    config.splits = 2;
    return config;
  }
  // m = 64: x's re-reads need 64 rows of W per program. Long rows: 64-wide steps and 4 splits on
  // 4 warps, the three programs per SM resident, with x as A: 32.17 us against 40.27 with W as A
  // (H200, commit f40693b; W as A had measured 40.48 against 44.27 for x as A with 32 rows;
  // 128-wide steps do not fit three per SM; 32-wide ones 54.10). Short rows: x as
  // A, 128-wide steps, unsplit (K = 1536 / 2304: 10.18 / 25.43 us; every split or narrower
  // step measured slower, 11.89-55.66).
  config.block_n = 64;
  if (long_rows) {
    config.block_k = 64;
    config.splits = 4;
    return config;
  }
  config.block_k = 128;
  config.splits = 1;
  return config;
}

int64_t gemv_partials_bytes(int m, int n, const GemvConfig& config) {
  return config.splits > 1 ? int64_t{config.splits} * m * n * 4 : 0;
}

int64_t gemv_counters_bytes(int n, const GemvConfig& config) {
  return config.splits > 1 ? int64_t{(n + config.block_n - 1) / config.block_n} * 4 : 0;
}

Program gemv_program(int m, int n, int k, const GemvConfig& config, const std::string& suffix) {
  std::string name = "gemv_m" + std::to_string(m) + "_k" + std::to_string(k) + "_n" + std::to_string(n) + suffix;
  const bool rows_divide = n % config.block_n == 0 || config.matrix_unit;  // matrix paths mask rows
  if (m < 1 || !rows_divide || k % (int64_t{config.block_k} * config.splits) != 0 || config.block_k % 8 != 0) {
    std::string expected = "m >= 1, n a multiple of block_n " + std::to_string(config.block_n) +
                           ", k a multiple of block_k x splits " + std::to_string(config.block_k) + " x " +
                           std::to_string(config.splits) + " and block_k of 8";
    std::string actual = "m " + std::to_string(m) + ", n " + std::to_string(n) + ", k " + std::to_string(k);
    throw Error(SourceLoc::from(SourceLocation::current()), "gemv_program",
                "the shape does not divide into the configuration's blocks: expected " + expected + ", got " + actual,
                expected, actual, "pick block sizes and splits that divide the shape (gemv_config does)");
  }
  Builder b(name, {.num_warps = config.num_warps});
  auto x = b.arg("x", ptr(bf16)), weight = b.arg("w", ptr(bf16)), y = b.arg("y", ptr(bf16));
  std::optional<Value> partials, counters;
  if (config.splits > 1) {
    partials = b.arg(kGemvPartials, ptr(f32));
    counters = b.arg(kGemvCounters, ptr(i32));
  }
  const int64_t k_split = k / config.splits;
  auto rows = program_id(0) * config.block_n + arange(0, config.block_n);
  std::optional<Value> row_ok;
  if (n % config.block_n != 0) row_ok = rows < n;
  auto k_begin = program_id(1) * static_cast<int>(k_split);
  std::vector<ResultPiece> pieces =
      !config.matrix_unit ? gemv_fma(x, weight, m, n, k, config, rows, k_begin, k_split)
      : config.swap_operands ? gemv_dot_swapped(x, weight, m, n, k, config, rows, row_ok, k_begin, k_split)
                             : gemv_dot(x, weight, m, n, k, config, rows, row_ok, k_begin, k_split);
  write_result(pieces, y, partials, counters, m, n, config.splits);
  return b.finish();
}

BenchKernel gemv_kernel(int m, int n, int k, const GemvConfig& config, const std::string& suffix) {
  BenchKernel kernel{gemv_program(m, n, k, config, suffix), {(n + config.block_n - 1) / config.block_n, config.splits, 1}, {}};
  if (config.splits > 1) {
    kernel.workspaces.push_back({kGemvPartials, gemv_partials_bytes(m, n, config), WorkspaceZero::kNever});
    kernel.workspaces.push_back({kGemvCounters, gemv_counters_bytes(n, config), WorkspaceZero::kOnce});
  }
  return kernel;
}

namespace {

// Matrix-unit alternatives: W as the unit's A operand (wa) or x (xa).
GemvConfig wa(int block_n, int num_warps, int block_k, int splits) {
  return GemvConfig{.matrix_unit = true, .block_n = block_n, .block_k = block_k, .splits = splits,
                    .num_warps = num_warps, .prefetch = false, .swap_operands = true};
}

GemvConfig xa(int block_n, int num_warps, int block_k, int splits) {
  GemvConfig config = wa(block_n, num_warps, block_k, splits);
  config.swap_operands = false;
  return config;
}

// The sweep for one harness shape, beside the chosen configuration: the runner-up of run A where
// it was close, and what run A left open (W as A at m = 1, 32 rows with 256-wide steps at m = 8
// and 16, the orientation of the m = 32 and m = 64 tiles). Run A's 32-wide steps, splits of 8
// and 128-row blocks lost 30-200% (W streams best in long runs per row) and are gone.
std::vector<GemvConfig> candidates(int m, int n, int k) {
  const bool narrow = n <= 1024;
  const bool long_rows = k >= 4096;
  if (m <= 4) {
    // m = 1: x padded to the unit's 8 rows moves the same bytes as the FMA rows (m = 4 with W as
    // A: 23.22 us at K = 7168, FMA m = 1: 25.67 in run A, 22.97 in f3fe6b4's). m = 4: 16 rows.
    if (narrow) return {wa(16, 1, 128, 7)};
    if (long_rows) return {wa(16, 1, 256, 1)};
    return {wa(32, 2, 128, 1), wa(16, 1, 128, 1)};
  }
  if (m <= 16) {
    if (narrow) return {wa(64, 4, 128, 7)};
    if (long_rows) return {wa(32, 2, 256, 1)};
    return {wa(16, 1, 128, 1)};
  }
  if (m <= 32) {
    if (narrow) return {};
    if (long_rows) return {wa(32, 2, 128, 2)};
    return {xa(32, 4, 128, 1)};
  }
  if (narrow) return {};
  if (long_rows) return {wa(64, 4, 64, 4), wa(64, 4, 64, 2), xa(32, 4, 128, 2)};
  return {wa(64, 4, 128, 1)};
}

}  // namespace

std::vector<BenchKernel> gemv_variant_kernels() {
  std::vector<BenchKernel> kernels;
  for (int m : {1, 4, 8, 16, 32, 64}) {
    for (auto [k, n] : {std::pair{7168, 6288}, std::pair{1536, 7168}, std::pair{3584, 768}, std::pair{2304, 12288}}) {
      const std::string chosen = gemv_label(gemv_config(m, n, k));
      for (const GemvConfig& config : candidates(m, n, k)) {
        const std::string label = gemv_label(config);
        if (label == chosen || k % (config.block_k * config.splits) != 0) continue;
        kernels.push_back(gemv_kernel(m, n, k, config, "__" + label));
      }
    }
  }
  return kernels;
}

Program gemv_program(int m, int n, int k) { return gemv_program(m, n, k, gemv_config(m, n, k)); }

BenchKernel gemv_kernel(int m, int n, int k) { return gemv_kernel(m, n, k, gemv_config(m, n, k)); }

}  // namespace monotile::kernels::bench
