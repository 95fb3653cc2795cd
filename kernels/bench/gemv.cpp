// The decode GEMV in the DSL. Bytes decide its speed: W (n k 2 bytes) is read once with 16-byte
// loads; x and y are small and stay in L2. FMA path: W is viewed as [block_n, block_k / 8, 8] so
// each thread's 8 contiguous bf16 (one 16-byte load) reduce inside the thread every step, and the
// per-row accumulators stay [block_n, block_k / 8] whatever m is; lanes meet once, after the loop.
#include "kernels/bench/gemv.h"

#include <algorithm>
#include <optional>
#include <source_location>
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
      std::source_location::current());
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
  // Chosen by the side-by-side measurements on the H200 (docs/perf.md, commit f3fe6b4): FMA rows
  // up to m = 4, W as the matrix unit's A operand (a warp per 16 rows) for m = 8 and 16 except on
  // narrow W (n <= 1024: there x as the A operand, padded to 16 rows, measured 6.4 us against 8.5
  // at m = 16), and x as the A operand above.
  GemvConfig config;
  config.block_n = 16;
  if (m <= kGemvFmaMaxRows) {
    // A 512-wide step (16 KB of W per program in flight) with the next one prefetched, where
    // each program then still makes a few steps; else 256 without prefetch.
    const bool wide = k % 512 == 0 && (m == 1 || k >= 3584);
    config.block_k = wide ? 512 : 256;
    config.prefetch = wide;
    config.splits = choose_splits(m, n, k, config.block_n, config.block_k, kGemvTargetPrograms);
    return config;
  }
  config.matrix_unit = true;
  config.prefetch = false;
  if (m <= 16 && n > 1024) {
    // One warp per 16 rows of W, unsplit: every program resident at once measured fastest. The
    // widest step that still lets the GPU hold all of them (the pipeline's 4 stages of W and x
    // set how many fit on an SM): unsplit 256-wide steps against 2 splits, all resident against
    // 1.5-2 waves, 23.46 / 24.16 us against 27.08 / 29.10 (K = 7168, m = 8 / 16) and 8.01
    // against 11.30 (K = 1536, m = 8); at K = 2304 (768 programs) 128-wide steps, resident
    // where 256 are not, 15.72 / 16.40 against 16.46 / 16.87 us (m = 8 / 16).
    config.swap_operands = true;
    config.num_warps = 1;
    config.splits = 1;
    config.block_k = 256;
    while (config.block_k > 64 && programs(n, config) > resident_programs(m, config)) config.block_k /= 2;
    return config;
  }
  // x as the A operand: every program reads all of x's rows for its rows of W, so the L2 -> SM
  // traffic for x is m / block_n times W's; 32 rows of W per program at m = 32 (K = 7168: 26.85
  // against 28.54 us; K = 1536: 8.55 against 9.85; K = 2304: 17.09 against 22.03) and 64 at
  // m = 64 (K = 1536: 10.16 against 14.83; K = 2304: 25.33 against 30.69) except at K = 7168,
  // where 64 rows leave 198 single-resident programs (1.5 waves) and 32 measured faster (44.12
  // against 48.54). Narrow W keeps 16 rows and more splits (latency-bound: 48 row blocks).
  config.block_k = m > 16 ? 128 : 256;
  if (n > 1024) config.block_n = m > 32 && k < 4096 ? 64 : 32;
  config.splits = choose_splits(m, n, k, config.block_n, config.block_k, kGemvTargetPrograms);
  if (m > 32 && n <= 1024) config.splits = 4;
  // N = 768 at m = 32: 256-wide steps, 7.39 against 7.92 us.
  if (m > 16 && m <= 32 && n <= 1024) {
    config.block_k = 256;
    config.splits = choose_splits(m, n, k, config.block_n, config.block_k, kGemvTargetPrograms);
  }
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
    throw Error(SourceLoc::from(std::source_location::current()), "gemv_program",
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

GemvConfig fma(int block_n, int block_k, bool prefetch) {
  return GemvConfig{.block_n = block_n, .block_k = block_k, .splits = 1, .prefetch = prefetch};
}

// The sweep for one harness shape. Counting bytes picks the families: a program reads x's m rows
// for its block_n rows of W, so x's L2 -> SM traffic is m / block_n of W's (m = 64, block_n = 16:
// 4x W); wider row blocks cut it, and splits bring the programs back to about three per SM, all
// resident at once (N = 6288: 393 x 16, 197 x 32 rows; N = 12288: 384 of 128 x 4 splits), with the
// steps narrowed (32-64 columns) until a stage of W and x leaves room for that many per SM.
// N = 768 is latency-bound (48 row blocks of 16): more splits, fewer steps per program.
std::vector<GemvConfig> candidates(int m, int n, int k) {
  const bool narrow = n <= 1024;
  if (m == 1) {
    // 74% of the floor at K = 1536 (3 steps of 512): 6 prefetched steps of 256. 89% at K = 2304
    // (9 steps of 16 x 256): 32 rows per program, or 18 prefetched steps.
    if (k == 1536) return {fma(16, 256, true)};
    if (k == 2304) return {fma(32, 256, false), fma(16, 128, true)};
    return {};
  }
  if (m == 4) {
    // W as the matrix unit's A operand, x padded to 8 rows: the FMA path issues about 1.6
    // instructions per multiply-add, the unit moves the same bytes.
    if (narrow) return {wa(16, 1, 128, 7)};
    if (k == 2304) return {wa(16, 1, 128, 1)};
    return {wa(16, 1, 256, 1), wa(16, 1, 128, 1)};
  }
  if (m <= 16) {
    if (narrow) return {wa(16, 1, 128, 7), wa(32, 2, 128, 7), wa(64, 4, 128, 7)};
    if (k >= 7168) return {wa(16, 1, 128, 1), wa(32, 2, 128, 2), wa(64, 4, 64, 4), wa(128, 8, 64, 8)};
    if (k == 1536) return {wa(16, 1, 128, 1), wa(16, 1, 256, 1), wa(32, 2, 128, 1), wa(32, 2, 64, 2), wa(64, 4, 64, 2)};
    return {wa(32, 2, 128, 1), wa(16, 1, 64, 1), wa(64, 4, 64, 2)};
  }
  if (m <= 32) {
    if (narrow) return {wa(32, 2, 64, 7), wa(64, 4, 128, 7)};
    if (k >= 7168) return {wa(64, 4, 64, 4), wa(128, 8, 32, 8), wa(32, 2, 64, 2)};
    if (k == 1536) return {wa(32, 2, 64, 1), wa(64, 4, 64, 2), wa(64, 4, 32, 4), wa(32, 2, 128, 1)};
    return {wa(64, 4, 64, 2), wa(32, 2, 64, 1), wa(128, 8, 32, 4), wa(32, 2, 128, 1)};
  }
  if (narrow) return {wa(64, 4, 64, 7), wa(32, 2, 64, 7), wa(64, 4, 128, 7), wa(32, 2, 32, 8)};
  // (256 rows on 8 warps need 128-178 registers a thread: one or two programs per SM.)
  if (k >= 7168) {
    return {wa(128, 8, 32, 8), wa(128, 8, 64, 4), wa(64, 4, 32, 4),
            wa(64, 4, 64, 4),  wa(128, 4, 32, 8), xa(64, 4, 32, 4)};
  }
  if (k == 1536) return {wa(64, 4, 32, 2), wa(64, 4, 64, 1), wa(128, 8, 32, 4), wa(32, 2, 64, 1), xa(64, 4, 32, 2)};
  return {wa(128, 8, 32, 4), wa(64, 4, 32, 2), wa(64, 4, 32, 4)};
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
