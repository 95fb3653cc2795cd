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

}  // namespace

GemvConfig gemv_config(int m, int n, int k) {
  // Chosen by the side-by-side measurements on the H200 (docs/perf.md): FMA rows up to m = 4,
  // W as the matrix unit's A operand (a warp per 16 rows) for m = 8 and 16 except on narrow W
  // (n <= 1024: there x as the A operand, padded to 16 rows, measured 6.4 us against 8.5 at
  // m = 16), and x as the A operand above.
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
    config.swap_operands = true;
    config.num_warps = 1;
    config.block_k = 256;
    config.splits = choose_splits(std::min(m, 8), n, k, config.block_n, config.block_k, kGemvMatrixTargetPrograms);
    return config;
  }
  // x as the A operand: every split re-reads x for its rows of W, so fewer, longer programs; at
  // m = 64 a program's x stages (16 KB each) leave room for two programs per SM, and the splits
  // that fill whole waves of those measured fastest (K = 7168: 2 splits, 49.8 us against 59.1
  // unsplit; N = 768: 4 splits, 9.1 us against 13.2).
  config.block_k = m > 16 ? 128 : 256;
  config.splits = choose_splits(m, n, k, config.block_n, config.block_k, kGemvTargetPrograms);
  if (m > 32) config.splits = k >= 7168 ? 2 : n <= 1024 ? 4 : 1;
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

std::vector<BenchKernel> gemv_variant_kernels() {
  std::vector<BenchKernel> kernels;
  for (int m : {1, 4}) {
    for (auto [k, n] : {std::pair{7168, 6288}, std::pair{1536, 7168}, std::pair{3584, 768}, std::pair{2304, 12288}}) {
      // The prefetch toggled (at 512-wide steps it costs registers, hence occupancy).
      GemvConfig other = gemv_config(m, n, k);
      other.prefetch = !other.prefetch;
      kernels.push_back(gemv_kernel(m, n, k, other, other.prefetch ? "__prefetch" : "__noprefetch"));
    }
  }
  for (int m : {8, 16, 32, 64}) {
    for (auto [k, n] : {std::pair{7168, 6288}, std::pair{1536, 7168}, std::pair{3584, 768}, std::pair{2304, 12288}}) {
      const GemvConfig base = gemv_config(m, n, k);
      auto add = [&](GemvConfig config, const std::string& label) {
        if (k % (config.block_k * config.splits) == 0) kernels.push_back(gemv_kernel(m, n, k, config, "__" + label));
      };
      if (base.swap_operands) {
        // 64 rows of W per program, a warp per 16: x is read a quarter as often.
        GemvConfig wide = base;
        wide.block_n = 64;
        wide.num_warps = 4;
        wide.splits = choose_splits(std::min(m, 8), n, k, 64, base.block_k, kGemvTargetPrograms);
        add(wide, "bn64");
        GemvConfig unsplit = base;
        unsplit.splits = 1;
        if (base.splits > 1) add(unsplit, "s1");
        GemvConfig narrow = base;
        narrow.block_k = 128;
        add(narrow, "bk128");
      } else {
        for (int block_n : {32, 64}) {
          GemvConfig wide = base;
          wide.block_n = block_n;
          wide.splits = choose_splits(m, n, k, block_n, base.block_k, kGemvTargetPrograms);
          add(wide, "bn" + std::to_string(block_n));
        }
        GemvConfig deep = base;
        deep.block_k = 2 * base.block_k;
        deep.splits = choose_splits(m, n, k, base.block_n, deep.block_k, kGemvTargetPrograms);
        add(deep, "bk" + std::to_string(deep.block_k));
      }
    }
  }
  return kernels;
}

Program gemv_program(int m, int n, int k) { return gemv_program(m, n, k, gemv_config(m, n, k)); }

BenchKernel gemv_kernel(int m, int n, int k) { return gemv_kernel(m, n, k, gemv_config(m, n, k)); }

}  // namespace monotile::kernels::bench
