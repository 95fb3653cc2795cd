// AttnRes of every row inside a layer kernel (k3_layer.md 3), spread over the program instances
// as (row, column chunk) tasks. A task has two halves:
//   1. the pending delta folded into the prefix (stored in place, and to the written block), the
//      sources' chunk as one [16, chunk] tile (blocks, then the prefix, then zero rows), its Gram
//      matrix V V^T on the matrix unit and its dots with norm * proj, stored as the task's
//      partials; the last task of a row to arrive publishes the row's flag;
//   2. after the row's flag: the row's partials summed (every task does it: a coefficient store
//      and its flag would cost two more round trips) into the mix's coefficients
//      a_s = softmax(logits)_s * rstd(mix), where the mix's sum of squares is a^T G a (so no pass
//      over the mixed row is needed); then out = bf16((sum_s a_s v_s) * out_norm) for the chunk.
//      The last task to finish publishes the whole output (one flag, so a consumer waits once).
// With a task for every program (the usual case: 7 chunks x up to 16 rows on 100+ SMs), a program
// runs both halves of its task back to back and keeps the tile in registers. With fewer programs,
// every program runs its first halves, then its second halves (re-reading the tile), so that each
// wait is for work that programs finish before they wait: any number of resident programs completes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "dsl/value.h"
#include "kernels/k3/handoff.h"
#include "kernels/k3/k2_clock.h"
#include "model/kernel_limits.h"

namespace monotile::kernels::k3 {

// The column chunk of a task: the least of kAttnResMinChunk, ..., 1024 dividing `hidden` that gives
// `tokens` rows at most kAttnResTasks tasks, else the largest of 16, 32, ..., 1024 dividing it. A
// task's time is the chain of instructions its program runs over a [16, chunk] tile (not memory: 32
// KB at 1024), so the rows' AttnRes ends sooner over more, narrower tasks while each still has a
// program to itself (K3's 7168 at 4 tokens on an H100: 28 tasks of 1024 columns took 21 us, 112 of
// 256 took 11).
int attn_res_chunk(int hidden, int tokens);
// The tasks the chunk aims at: a program each on GPUs of 128 units and more.
inline constexpr int kAttnResTasks = 128;
// The narrowest chunk: a task's second half loads every chunk's partials of its row at once, and
// K3's 56 chunks of 128 (at 1 and 2 tokens) spilled K2 on sm_90a where 28 of 256 fit.
inline constexpr int kAttnResMinChunk = 256;
// What a row's tasks add to its counter each launch: one span for every width of the rank, whose
// builds share the counters but not the chunk (handoff.h, arrive).
int attn_res_row_span(int hidden);
// Sources of a chunk tile: the blocks and the prefix, padded to the matrix unit's 16 rows.
inline constexpr int kAttnResSources = model::kKernelAttnResSources;
// f32 partials per (row, chunk): the Gram matrix and the dots.
inline constexpr int kAttnResPartials = kAttnResSources * kAttnResSources + kAttnResSources;

struct AttnResRows {
  int hidden = 0;
  int tokens = 0;
  // The layer's place among the blocks is data, not code, so that one build serves every layer of
  // a kind: `nblocks` (i32, 0..max_blocks) block sources before the prefix, and `write_index` (i32;
  // >= 0: the (updated) prefix is stored to block write_index; none: never). The tile's rows past
  // max_blocks (at most 15, compile-time) are never read.
  int max_blocks = kAttnResSources - 1;
  dsl::Value nblocks;
  std::optional<dsl::Value> write_index;
  float eps = 1e-5f;      // the AttnRes norm's
  float out_eps = 1e-5f;  // the output norm's
  // The column chunk of a task: 0 takes attn_res_chunk(hidden, tokens); another must be one that
  // attn_res_chunk gives at some width (a row's tasks count within attn_res_row_span).
  int chunk = 0;
  dsl::Value prefix;      // ptr<bf16> [T, H]
  std::optional<dsl::Value> delta;  // ptr<bf16> [T, H], when a delta is pending
  // With a delta: i32, nonzero where the prefix restarts at it (P' = delta, not P + delta); none:
  // it never does.
  std::optional<dsl::Value> reset;
  // With a delta made by the same launch: the flag that says all of it is written (the first
  // halves wait for it before reading it; region kDeltaRegion in health records).
  std::optional<dsl::Value> delta_flag;
  dsl::Value blocks;      // ptr<bf16>: blocks[t, b, c] at t token_stride + b block_stride + c
  dsl::Value token_stride, block_stride;
  dsl::Value norm, proj, out_norm;  // ptr<bf16> [H]
  dsl::Value out;         // ptr<bf16> [T, H]
  // Scratch: partials f32 [T, chunks, kAttnResPartials]; counters: the first halves' per row, then
  // the second halves' per width (T); flags: "the row's partials written" per row, then "out written".
  dsl::Value partials;
  dsl::Value counters, flags;  // ptr<i32> [32] and [17]
  K2Clock clock;               // K2's stage clock: B's delta, half and row points (a first task's)
};

// `while_waiting`, when given, is run once by every program between its first halves and its first
// wait for a row's flag (by a program without a task, at once): work that needs nothing AttnRes
// makes, which then overlaps AttnRes's latency-bound second half (K1 asks L2 for its first in_proj
// weights there).
void attn_res_rows(const AttnResRows& rows, const HandoffContext& context,
                   const std::function<void()>& while_waiting = {});

// The linear form's first stage (K1's linear in_proj, k1.h K1Build::linear_in_proj): every first
// half (as attn_res_rows's: the delta folded in and stored, the block write, the tile's Gram matrix
// and dots as its partials) over every program, none waiting, each also storing its chunk of every
// source times out_norm, rounded to bf16, at rows[(s * block + t) * hidden + column] (s <= nblocks),
// and arriving on `counter`; the last of them sets `flag`: the sources and every row's partials
// are written. No mixed row is made.
struct AttnResSources {
  dsl::Value rows;
  int block = 0;  // a power of two >= tokens
  dsl::Value counter, flag;
  // The tasks from the last program down (program p takes tasks P - 1 - p, 2P - 1 - p, ...): the
  // first programs, free of them when tasks < programs, can start other work at once.
  bool from_last = false;
};
void attn_res_sources(const AttnResRows& rows, const HandoffContext& context, const AttnResSources& sources);

// Where attn_res_mix leaves the mix: row t's coefficient of source s at coefficients[s *
// source_stride + t], f32, for the nblocks + 1 sources; the last row done arrives on `counter` and
// sets `flag`.
struct AttnResMix {
  dsl::Value coefficients;
  int source_stride = 0;
  dsl::Value counter, flag;
};

// After attn_res_sources's flag (the caller waits for it): the programs numbered `worker` of
// `workers` (worker in 0..workers-1) form rows' mix coefficients a_s = softmax(logits)_s *
// rstd(mix) (the mixed row's sum of squares from the Gram matrix, as attn_res_rows's second half
// forms them), for the caller to fold into a linear map of the sources: x = out_norm * sum_s a_s v_s.
void attn_res_mix(const AttnResRows& rows, const HandoffContext& context, const dsl::Value& worker,
                  const dsl::Value& workers, const AttnResMix& mix);

// The health-record region of a wait for AttnResRows::delta_flag.
inline constexpr int32_t kDeltaRegion = 4;

// The flag that says all of `out` is written: rows.flags + 16.
dsl::Value attn_res_done_flag(const AttnResRows& rows);

}  // namespace monotile::kernels::k3
