// The MoE router inside a layer kernel (k3_layer.md 5.1), as two task loops:
//   1. logits = y W_gate^T in f32, a GEMV task per (block of experts, slice of K) (gemv_task.h),
//      every rank computing every expert; each task stores its partial sums (W_gate is one of K2's
//      first reads and the union of the chosen experts waits for it: with a task per block of
//      experts alone, K3's 14 blocks streamed 12.8 MB on 14 SMs in about 85 us). The last slice to
//      arrive for a block sums the block's partials and hands in each row's candidates: the top k
//      of the block's keys (all of them where k is a block or more), so that the route's second
//      loop selects from the blocks' candidates (K3: 224) instead of every expert (896) after the
//      last logit, and the blocks' selections run on the programs as their logits complete;
//   2. per row: s = sigmoid(logit); the top k (any k in 1..E) of s + bias (the correction bias
//      chooses, it does not weigh), ties to the lower expert id, a NaN key last (it becomes -inf,
//      so a NaN ties with a -inf key); weights s / sum(s) over the chosen (NaN counts 0;
//      renormalize), times the scaling factor, in descending key order.
// The top k of the union of the blocks' top k are the top k, under the same order: a block's
// candidates sit in its key order (the lower id first on ties) and the blocks in id order, so that
// among equal keys the lower position is the lower id.
#pragma once

#include <cstdint>

#include "dsl/reduce.h"
#include "dsl/value.h"
#include "kernels/k3/handoff.h"
#include "kernels/k3/k2_clock.h"

namespace monotile::kernels::k3 {

struct RouterRows {
  int hidden = 0;
  int tokens = 0;
  int experts = 0;
  int top_k = 0;
  bool renormalize = true;
  float scaling = 1.0f;
  int gemv_rows = 64;
  int gemv_step = 256;
  // The blocks store their scores and hand in (key, id) pairs; a row's program reads its candidates
  // in one round trip and, where its [picks, candidates] one-hot tile is small, asks for every
  // candidate's score before its sort (whose steps cover that trip). Off (AMD's builds), the keys
  // and the ids apart and the winners' scores from their logits after the sort.
  bool scores_ahead = true;
  dsl::Value y;           // ptr<bf16> [T, H], readable after y_flag
  dsl::Value y_flag;      // the flag that publishes y
  dsl::Value w_gate;      // ptr<bf16> [E, H]
  dsl::Value bias;        // ptr<f32> [E]
  // scratch ptr<f32> [router_scratch_floats(...)]: each K slice's partial sums [router_splits(...), T,
  // E], the scores [T, E], then each row's candidates [T, C, 2] as (key, expert id as f32) pairs, C
  // router_candidates(...)
  dsl::Value logits;
  dsl::Value block_counters;  // router_blocks(...) words: each block's K slices' arrivals
  dsl::Value counter, flag;   // one word each: the blocks' candidates' arrivals and flag
  dsl::Value experts_out;    // ptr<i32> [T, top_k]
  dsl::Value weights_out;    // ptr<f32> [T, top_k]
  dsl::Value route_counter, route_flag;  // one word each: every row's route written
  K2Clock clock;
};

// Health-record regions of the router's waits: for y, and for the logits.
inline constexpr int32_t kRouterInputRegion = 5;
inline constexpr int32_t kRouterLogitsRegion = 6;

// The programs the router's GEMV tasks are sized for: below a full H200 (132 SMs) or MI300X (304 CUs),
// so that every task of the stage runs at once.
inline constexpr int kRouterPrograms = 128;

// The K slices of the router's GEMV: the most that divide its K steps (hidden / gemv_step) with
// (experts / gemv_rows rounded up) x slices tasks at most kRouterPrograms.
int router_splits(int experts, int hidden, int gemv_rows, int gemv_step);

// The GEMV's blocks of experts: a counter word each.
int router_blocks(int experts, int gemv_rows);
// The candidates a block hands in per row: the least power of two >= top_k, at most its rows.
int router_block_candidates(int top_k, int gemv_rows);
// Every block's, per row (router_blocks x router_block_candidates).
int router_candidates(int experts, int top_k, int gemv_rows);
// The f32 words of RouterRows::logits.
int64_t router_scratch_floats(int experts, int hidden, int tokens, int top_k, int gemv_rows, int gemv_step);

// The k largest of `keys` (f32 [n], n a power of two; no NaN) with their indices, in topk's order:
// value descending, the lower index first on ties. Where k is a power of two of at most 32 and n at
// least 512, in two rounds (each 128-key chunk's k largest in its own warp, then the largest of those
// candidates): fewer steps than one network over all n.
dsl::Sorted router_topk(const dsl::Value& keys, int64_t n, int k);

void router_rows(const RouterRows& rows, const HandoffContext& context);

}  // namespace monotile::kernels::k3
