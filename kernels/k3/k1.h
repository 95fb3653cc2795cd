// K1, the first launch of a KDA layer on one TP rank: from the residual stream to o_proj's input,
// as one persistent DSL program (k3_layer.md 3-4; the seed's `kda_pre`). Stages, each a task loop
// over every program instance, handed on through tagged flags in a scratch buffer:
//   A. AttnRes (attn_res_stage.h): the pending delta folded into the prefix (stored in place), the
//      block write, the mix over the block sources, the input RMSNorm -> x [T, H], as (row, chunk)
//      tasks; then each program loads its first stage C task's inputs that no stage writes (its
//      state slice, conv windows, slots), whose round trips then hide behind stage B;
//   B. the merged in_proj GEMV x W_in^T -> proj [T, rows] (row blocks; waits for every x row; the
//      last block to finish publishes the whole proj);
//   C. per (request, head, quarter of the state rows): f_b on f_a, the short causal conv, gates,
//      beta, q/k l2norm and the delta rule storing one state per position; the last quarter to
//      finish a (request, head) applies the gated RMSNorm to the head's rows, writes `core` and
//      the head's new conv state (every quarter has read the old one by then). A program's one
//      task runs straight after the wait; with more tasks than programs, one loop over them (one
//      copy of the task's code, each task loading the next one's inputs at its end).
// The overlap (the stage clock's points, k1_bench --stages, show it): stage C's first inputs come
// while W_in streams (points "A" to "B"); in the loop, a task's successor's inputs and W_fb's
// head rows while it runs. Measured and off (K1Build): W_in's first third asked into L2 during
// AttnRes's second half (prefetch_weights), o_proj's W_o during stage C (prefetch_next). With
// dependent_launch, each program asks L2 for its first in_proj rows before it waits for the previous
// kernel's end, on the SMs that kernel's finished programs free.
// The linear form (K1Build::linear_in_proj) reorders A and B so that W_in streams without AttnRes:
//   A0. AttnRes's first halves over every program (attn_res_sources: the delta folded in, the block
//      write, each (row, chunk) tile's Gram matrix and dots), each also writing its chunk of every
//      source times the input norm's weight, bf16: one hand-off ("sources written");
//   B. the in_proj tasks stream W_in against all the source rows at once, while the programs past
//      them (or, with none such, every program first) form each row's mix coefficients from the
//      partials (attn_res_mix); each task waits for them only to fold its f32 products,
//      proj[t] = bf16(sum_s a_{t,s} W_in (w_norm * v_{s,t})), and publishes as above;
//   C. as above.
// Its overlap: W_in streams from A0's hand-off (point "A" of the in_proj programs) while the mix
// is formed on the others (point "A" of the latest program).
// No wait is unbounded: a wait gives up after `wait_ns`, records itself in the rank's health words
// and raises the alarm word; the launch then runs to its end with whatever it read.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dsl/ir.h"
#include "dsl/target.h"
#include "model/config.h"
#include "support/source_location.h"

namespace monotile::kernels::k3 {

// Every parameter that changes K1's code; two layers that differ only in data share one build.
// Besides, the layer's place among the AttnRes blocks (nblocks, write_index): launch values, not
// code. k1_name leaves them out, the program takes them as its parameters `nblocks` and
// `write_index`, and the builds of layers that differ only in them are one kernel (K3's executor
// compiles a K1 a width, not one a layer).
struct K1Build {
  int hidden = 7168;          // H
  int heads = 12;             // NHl: this rank's KDA heads (head_dim 128, conv width 4)
  int in_proj_rows = 6288;    // rows of the merged in_proj: 4 Pl + 128 + NHl + pad
  int tokens = 4;             // T = requests x q, request-major
  int q = 4;                  // tokens per request (num_spec + 1)
  int nblocks = 1;            // launch value: AttnRes block sources before the prefix (0: x mixes the prefix alone)
  int max_blocks = 15;        // code: the most block sources a launch may pass (k1_build: the model's)
  bool delta = false;         // a pending delta is folded into the prefix
  int state_len = 6;          // conv state entries per channel (>= q + 2)
  int write_index = -1;       // launch value: >= 0 at a block-write layer, the updated prefix is stored to blocks[:, i]
  float eps = 1e-5f;          // self_attention_res_norm
  float out_eps = 1e-5f;      // input_layernorm
  float onorm_eps = 1e-5f;    // the gated o_norm
  float lower_bound = -5.0f;  // gate_lower_bound
  int64_t wait_ns = 10'000'000'000;  // a hand-off wait gives up after this long
  // The target's shape of the work (k1_for_target): warps of the target's width per program, and
  // the in_proj GEMV's K step (its W tile goes through shared memory / LDS).
  int num_warps = 8;
  int gemv_step = 256;
  int gemv_rows = 64;  // rows of W_in an in_proj task takes: 64, or 48 to fit the tasks in one round
  // GemvTask::ahead of the in_proj GEMV: 0 stages W_in's tiles through shared memory / LDS; n >= 1
  // takes them into the matrix unit's registers n K steps ahead, with no barrier in the loop. Other
  // than 0, the name ends "_a{n}" (k1_bench --gemv-ahead times it).
  int gemv_ahead = 0;
  // A program's first stage C task loads its inputs that no stage writes before stage B (k1.cpp
  // KdaPrologue); off where holding them through stage B would spill (AMD, q > 4), and ignored
  // with gemv_ahead (its W tiles in registers beside them spilled on sm_90a: t8 q4, 64-wide steps
  // three ahead, 8 spill stores).
  bool early_inputs = true;
  // Shared-memory stages of the in_proj GEMV's pipelined dot (KernelOptions::num_stages): 0 takes
  // the most that fit; fewer leave L1 more room (K2 on NVIDIA runs 3, k2.h). Other than 0, the name
  // ends "_st{n}" (k1_bench --pipeline times others).
  int num_stages = 0;
  // The bytes L2 fetches from memory around each of the in_proj GEMV's W_in loads
  // (AccessOptions::l2_fetch: 0, the target's own, or 64, 128, 256; K2's experts fetch 128 or 256).
  // Other than 0, the name ends "_lf{n}" (k1_bench --l2-fetch times it).
  int gemv_l2_fetch = 0;
  // Stage B as stream-K: every program takes an equal run of the (row block, K step) units, so that
  // all of them stream W_in (K3's TP 8 rank has 99 row blocks for 132 SMs); the programs sharing a
  // row block sum their f32 partials in a fixed order. On, the name ends "_sk" (k1_bench --stream-k).
  bool stream_k = false;
  // Each in_proj task's program asks L2 for the first third of its W_in rows (k1.cpp
  // prefetch_in_proj) after its AttnRes first half, while AttnRes's latency-bound second half runs
  // (attn_res_rows' while_waiting). Off: on an H100 K1 was 0-7% slower with it (AttnRes then ended
  // 8-10 us later: a program's 300 KB of prefetches drain at its share of the bandwidth, and its
  // own loads wait behind them; stage B ended no sooner). Before stage A, as first written, it was
  // 4-6% slower. On, the name ends "_pw" (k1_bench --prefetch times it). In the linear form
  // (linear_in_proj) the same rows are asked for after the program's AttnRes first halves (given to
  // the last programs first, so that most in_proj programs have none), before its wait for the
  // sources' hand-off (the stream's only wait before its tasks; k1_bench --linear --prefetch times it).
  bool prefetch_weights = false;
  // The next weights ahead: the programs without a stage C task (or with fewer than others) ask L2
  // for the next kernel's weights (o_proj's W_o: `next_weights`, `next_elements` bf16 elements),
  // an equal share each, once stage B has ended and while the latency-bound stage C runs, so that
  // the next GEMV reads them from L2. Adds the parameters `next_weights` (ptr<bf16>) and
  // `next_elements` (i64) after `alarm`; on, the name ends "_pn" (k1_bench --prefetch-next). Off:
  // on an H100 K1 was 2-8% slower with it and K1 + o_proj 0-5% (K1 cannot end before its
  // prefetches have landed, and the GEMV after it gained less than that).
  bool prefetch_next = false;
  // Stage C's tasks always in the loop that carries the next task's prologue (k1.cpp kda_loop), also
  // when every program has one task or none (by default, that task runs straight after the wait).
  // On, the name ends "_kl" (k1_bench --kda-loop).
  bool kda_loop = false;
  // A program's one stage C task (the straight path after the wait, as without kda_loop where
  // every program has a task or none) loads its decays' weights (W_fb's head block, a_log, the
  // head's dt_bias) into registers and asks L2 for o_norm's lines before it waits for proj, once
  // its in_proj tasks are done: after the wait, its first round trip is then proj's alone (the
  // default loads W_fb there, from memory, and dt_bias a round trip later). Only with the early
  // inputs and without kda_loop (elsewhere it changes nothing and the name has no suffix); on, the
  // name ends "_kw" (k1_bench --kda-weights).
  bool kda_weights_ahead = false;
  // Stage C's finish split: the new conv state written as two tiles of exactly the entries
  // written (the kept old entries, then the q new ones) rather than one tile of pow2(q + 2)
  // entries; each quarter writes its own v channels' state before its recurrence (their kept entries
  // from its window: no other task reads them); and every quarter loads, before its arrival, what
  // the head's finish reads that no other quarter writes (o_norm, the gate's rows, q and k's old
  // conv entries and new rows), so that after the arrival the last quarter loads only the o rows
  // and stores. sm_90a t4 q4 (with kda_weights_ahead): 356 instructions after the arrival, 841
  // without. Up to q = 4 (at q 8 sm_90a spilled: it changes nothing there, and the name has no
  // suffix); on, the name ends "_cs" (k1_bench --conv-state-split).
  bool conv_state_split = false;
  // AttnRes off the in_proj stream's path, by linearity: x = w_norm * sum_s a_s v_s, with a_s the
  // softmax weight of source s times the row's norm factor, so W_in x = sum_s a_s W_in (w_norm *
  // v_s). Stage A becomes A0, AttnRes's first halves over every program, each also writing its
  // sources' rows w_norm * v_s rounded to bf16, with one hand-off; stage B streams W_in against all
  // (nb + 1) x T source rows at once while the programs without an in_proj task (or, with none
  // such, every program first) form each row's coefficients a_s; each in_proj task folds
  // proj[t] = bf16(sum_s a_{t,s} acc_{s,t}) at its end. x is never made: x_rows holds the source
  // rows instead (k1_scratch). Numerics in docs/k1_linear.md (vLLM
  // rounds x to bf16 before in_proj; this form rounds each source's w_norm * v_s instead). Refused
  // where k1_linear_refusal says; on, the name ends "_lin" (k1_bench --linear).
  bool linear_in_proj = false;
  // Adds a last parameter `clock` (ptr<i64> [programs, 7]): each program stores global_timer() at
  // its start, at the end of stages A, B and C, and in its last KDA task when its inputs are ready,
  // its recurrence is done and the task is done (for k1_bench --stages).
  bool stage_clock = false;
  // Programmatic dependent launch (dsl/memory.h): each program first lets the next kernel start on
  // the SMs this one frees (launch_dependents), asks L2 for its first in_proj task's first rows (as
  // prefetch_in_proj), and only then waits for the previous kernel's end (wait_grid_dependency)
  // before it reads anything a kernel writes (the epoch, the prefix and delta, blocks, caches). The
  // launch then starts while the previous kernel's last programs run. On, the name ends "_pdl".
  bool dependent_launch = false;

  int requests() const { return tokens / q; }
  int projection() const { return heads * 128; }  // Pl
  bool operator==(const K1Build&) const = default;
};

// The build of `layer` (a KDA layer) on a rank with `heads` local heads and `in_proj_rows` rows, at
// `tokens` rows of q; nblocks, write_index, the eps values and max_blocks (the model's block count,
// at most 15) come from the config. Refused, with the value and what is expected: a layer that is
// not KDA, head_dim != 128, conv width != 4, tokens not a multiple of q, q outside 2..8, tokens
// past 16, state_len < q + 2.
absl::StatusOr<K1Build> k1_build(const model::ModelConfig& config, int layer, int heads, int in_proj_rows,
                                 int tokens, int q, int state_len, bool delta);

// The build for `target`: on AMD (64-wide
// wavefronts, 64 KiB of LDS) 4 wavefronts and 128-wide GEMV steps, so that the program has as many
// threads as on NVIDIA and its LDS fits; early stage C inputs on NVIDIA up to q = 4 (beyond, sm_90a
// spills them). In_proj tasks take 64 rows everywhere (k1.cpp says why not 48).
K1Build k1_for_target(K1Build build, const dsl::Target& target);

// The most accumulator columns (source rows, padded: gemv_task.h gemv_padded_rows) of the linear
// in_proj; see k1_linear_refusal.
inline constexpr int kK1LinearMaxRows = 128;

// Why `build`'s linear in_proj (K1Build::linear_in_proj) cannot be built, every reason joined with
// "; "; "" when it can (or when the form is off). Refused: with stream_k or gemv_ahead, and where
// max_blocks + 1 sources of the token block (the least power of two >= T) pad to more than
// kK1LinearMaxRows accumulator columns (at 256 a K step's x tile alone needs 256 registers a thread;
// 128 compiles for sm_90a with no spills: docs/k1_linear.md).
std::string k1_linear_refusal(const K1Build& build);

// The linear in_proj's build for one layer: `build` (from k1_build, its nblocks the layer's) with
// linear_in_proj on and max_blocks lowered to the most sources that pad to the accumulator columns
// the layer's own nblocks + 1 need (never above the given max_blocks). The accumulator, the source
// rows each in_proj task reads from L2 every K step and its shared-memory stages then follow the
// layer rather than the model: at K3's T 4 the layers with nblocks 0-1, 2-3, 4-7 and 8 take 8, 16,
// 32 and 64 columns (builds of max_blocks 1, 3, 7, 8), where the model's max_blocks gave every one
// 64; and 16 tokens fit 128 columns up to nblocks 7. k1_linear_refusal still decides.
K1Build k1_linear_sized(K1Build build);

// "k3_k1_h{H}_nh{NHl}_r{in_proj_rows}_t{T}_q{q}_mb{max_blocks}_d{0|1}_sl{SL}_nw{warps}_k{step}_g{rows}", then "_e" where
// the early inputs are loaded, "_st{n}" with num_stages, "_lf{n}" with gemv_l2_fetch, "_sk" with stream-K, "_a{n}"
// with gemv_ahead, "_pw" with the weights' prefetch, "_pn" with the next weights', "_kl" with kda_loop, "_kw" with
// stage C's weights ahead (where they are loaded), "_cs" with stage C's finish split, "_lin" with the
// linear in_proj, "_clock" with the stage clock, "_pdl" with dependent_launch, plus a hash of the eps values
// and the lower bound when they differ from the defaults.
std::string k1_name(const K1Build& build);

// The program. Parameters, in order:
//   prefix (ptr<bf16> [T, H], updated in place), delta (ptr<bf16> [T, H]; only when build.delta),
//   blocks (ptr<bf16>), blocks_token_stride, blocks_block_stride (i64 elements: blocks[t, b, c]),
//   nblocks (i32, 0..max_blocks), write_index (i32, -1: no block write),
//   ares_norm, ares_proj, in_norm (ptr<bf16> [H]), w_in (ptr<bf16> [rows, H]),
//   w_fb (ptr<bf16> [Pl, 128]), conv_w (ptr<f32> [3 Pl, 4]),
//   conv_state (ptr<bf16>), conv_slot_stride, conv_channel_stride, conv_entry_stride (i64 elements:
//     both the channels-last [slots, SL, 3 Pl] and the dim-first [slots, 3 Pl, SL] layouts),
//   a_log (ptr<f32> [NHl]), dt_bias (ptr<f32> [Pl]), o_norm (ptr<bf16> [128]),
//   state (ptr<f32>), state_slot_stride (i64; a multiple of 4): V-first [slots, NHl, 128, 128],
//   state_indices (ptr<i32>), state_indices_stride (i64): [N, q], column 0 the conv slot,
//   num_accepted (ptr<i32> [N], 1..q), core (ptr<bf16> [T, Pl]),
//   the scratch views of K1Scratch (x_rows, proj, o_rows, ares, flags, counters),
//   epoch (ptr<i32>: the step epoch), layer (i32: the tag slot, < 128),
//   health (ptr<i32>: health_words(programs)), alarm (ptr<i32>)[, next_weights (ptr<bf16>),
//   next_elements (i64): with prefetch_next][, clock (ptr<i64>)].
// Any number of programs may run it (num_programs(0); one per SM is the intent), all resident at
// once: a program waits only for work that programs which never wait before it produce.
dsl::Program k1_program(const K1Build& build, SourceLocation loc = SourceLocation::current());

// The parameter names of k1_program, in order.
std::vector<std::string> k1_parameters(const K1Build& build);

// K1's scratch: views into one buffer, each 256-byte aligned. The control words (counters, flags)
// come first and sit at the same offsets for every width of a rank; they must be zero once, when
// the buffer is made, and no launch needs them reset (flags compare with the launch's tag; a counter
// grows by the same power of two every launch, wrapping at 2^32: handoff.h arrive). The buffer of the widest build serves every width.
struct K1Scratch {
  int64_t counters = 0;  // i32 [33 + 8 NHl + row blocks + 32]: AttnRes's, in_proj tasks done, quarters
                         // per (request, head), stream-K's segments per in_proj row block, the
                         // linear form's sources and mix per width
  int64_t flags = 0;     // i32 [35]: AttnRes's (a row's partials, x written), "proj written", the
                         // linear form's "sources written" and "mix written"
  int64_t zeroed_bytes = 0;  // [0, zeroed_bytes) must be zero before the first launch
  int64_t ares = 0;      // f32: AttnRes's partials, then stream-K's (stage B starts after AttnRes ends);
                         // with the linear form, its mix's coefficients after the partials
  int64_t x_rows = 0;    // bf16 [T, H]; with the linear form, the source rows [blocks x block, H]
  int64_t proj = 0;      // bf16 [T, rows]
  int64_t o_rows = 0;    // f32 [N, NHl, q, 128]
  int64_t bytes = 0;     // the whole buffer
};
K1Scratch k1_scratch(const K1Build& build);

// Health words for `programs` program instances: word 0 is FAILED; record p + 1 (8 words) holds
// the first wait program p gave up on: [1, region, index, expected tag, seen tag, p, clock, 0].
inline constexpr int kHealthRecordWords = 8;
inline int64_t health_words(int programs) { return int64_t{programs + 1} * kHealthRecordWords; }

// The tag every flag of one launch carries: (epoch mod 2^22) * 256 + slot + 1 (never 0).
inline int32_t step_tag(int32_t epoch, int slot) { return (epoch & ((1 << 22) - 1)) * 256 + slot + 1; }

// The stage_clock build's i64 words per program (K1Build::stage_clock).
inline constexpr int kK1ClockPoints = 7;

// Region ids in the health records.
enum class K1Region : int32_t { kAttnRes = 1, kXRows = 2, kProj = 3, kSources = 5, kMix = 6 };

}  // namespace monotile::kernels::k3
