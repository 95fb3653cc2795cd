// The latent MoE inside a layer kernel (k3_layer.md 5.2-5.6), after the router, as task loops
// handed on through tagged flags (handoff.h), every wait for an earlier loop in program order
// (D, E, G, H, I, J, F, K):
//   D. the latent lat = bf16(y W_ld^T) [T, LAT] (GEMV tasks; every rank computes all of it);
//   E. the shared experts' activation a = bf16(SiTU(bf16(y W_g^T), bf16(y W_u^T))) [T, SI] (tasks of
//      32 gate rows and their 32 up rows);
//   (D's and E's tasks take a part of K each (front_parts): the last part of a row block to arrive
//   sums the parts' f32 partials in part order and finishes the block;)
//   F. the shared experts' partial bf16(a W_sd^T) [T, H];
//   G. the union of the experts the rows chose (one program: sorted, deduplicated, ascending ids);
//   H. per (union expert, 64 of its Ir rows): g and u from the MXFP4 w13 (mxfp4_gemv.h) on lat,
//      h = bf16(SiTU(g, u)) (the math reference keeps h exact; bf16 feeds the matrix unit, where
//      ROCm's stock path requantizes h to MXFP4) -> inter [union, T, Ir]; a fixed task count (every
//      possible union slot), so the arrivals are known when the program is built;
//   I. per (chunk of routed_chunk union slots, 128 latent rows): the chunk's routed sum,
//      sum_u w[t, u] (W2_u h_u) in union order, as an f32 partial in the chunk's own scratch slot;
//      then per 64 latent rows the chunks summed in chunk order (deterministic, no atomics), through
//      the latent Exchange (exchange.h); (H's and I's MXFP4 loads may come through shared-memory
//      stages: expert_stages, routed_stages; with chunk_handoff a task waits only for the H tasks
//      of its own chunk's experts, so that the programs H leaves idle first start I;)
//   J. per row: the routed RMSNorm of the reduced latent, bf16(bf16(x rstd) w) (two roundings, as
//      vLLM's RMSNorm kernel), or the latent itself without the norm;
//   (F runs here, after J: only K reads it; with shared_early, between H and I instead;)
//   K. per 64 hidden columns: shared + the rank's up-projection rows bf16(normed W_up^T), rounded
//      once, through the final Exchange: the layer's MoE output.
#pragma once

#include <cstdint>

#include "dsl/dot.h"
#include "dsl/value.h"
#include "kernels/k3/exchange.h"
#include "kernels/k3/handoff.h"
#include "kernels/k3/k2_clock.h"

namespace monotile::kernels::k3 {

struct MoeRows {
  int hidden = 0;         // H
  int tokens = 0;         // T
  int latent = 0;         // LAT
  int experts = 0;        // E
  int top_k = 0;
  int expert_rows = 0;    // Ir: this rank's intermediate rows of an expert (w13 holds 2 Ir)
  int shared_rows = 0;    // SI: this rank's shared intermediate
  int up_first = 0;       // this rank's first up-projection row (hidden column)
  int up_rows = 0;        // this rank's up-projection rows
  bool latent_norm = true;
  float norm_eps = 1e-5f;
  float situ_beta = 4.0f, situ_linear_beta = 25.0f;
  int gemv_step = 256;
  int min_k_steps = 2;    // K steps of E's and H's GEMVs where K allows (K2Build::min_k_steps)
  bool mxfp4_pairs = true;  // H's and I's weights decoded a byte a word (K2Build::mxfp4_pairs)
  bool mxfp4_words = true;  // and four bytes at once; lat and inter in its K order (K2Build::mxfp4_words)
  int mxfp4_scale_bias = 0;  // with words: one multiply a word where codes allow (K2Build::mxfp4_scale_bias)
  // with words: the instructions that place the nibbles (K2Build::mxfp4_shift_placement)
  dsl::Mxfp4Placement mxfp4_placement = dsl::Mxfp4Placement::kCopies;
  int expert_ahead = 2;     // H's and I's K steps of loads in flight (K2Build::expert_ahead)
  bool x_ahead = false;     // their x words loaded with the weights (K2Build::expert_x_ahead)
  int prefetch_steps = 0;   // their L2 prefetch distance in K steps (K2Build::expert_prefetch_steps)
  int l2_fetch = 0;         // L2's fetch around their weight loads (K2Build::expert_l2_fetch)
  int routed_chunks = 32;   // stage I's most union chunks (K2Build::routed_chunks)
  int latent_rows = 64;     // D's latent rows a task (K2Build::latent_rows)
  int front_parts = 1;      // D's and E's K parts (K2Build::front_parts, resolved)
  int expert_stages = 0;    // H's GEMV through shared memory (K2Build::expert_stages)
  int expert_stage_steps = 1;  // its K steps a stage copies (K2Build::expert_stage_steps)
  bool codes_ahead = false;    // H's and I's staged loops carry their codes (K2Build::expert_codes_ahead)
  int stage_fetch = 0;         // L2's fetch around their staged copies (K2Build::expert_stage_fetch)
  int expert_task_loop = 0;    // H's first tasks a program as one staged loop (K2Build::expert_task_loop)
  int expert_first_fetch = 0;  // H's first task's K steps asked of L2 at the union (K2Build::expert_first_fetch)
  bool up_ahead = false;       // W_up asked of L2 before H's waits (K2Build::up_ahead)
  int routed_stages = 0;    // I's sums likewise (K2Build::routed_stages)
  bool shared_early = false;  // F between H and I (K2Build::shared_early)
  // I's tasks wait for their own chunk's H tasks, not for all of H (K2Build::chunk_handoff): the
  // counters and flags below, one word a chunk, and the span every launch adds to a chunk's counter.
  bool chunk_handoff = false;
  int chunk_span = 0;
  int token_rows = 16;      // H's and I's token dim (K2Build::expert_token_rows)
  dsl::Value y, y_flag;                      // ptr<bf16> [T, H] and its flag
  dsl::Value route_experts, route_weights;   // [T, top_k] i32 / f32
  dsl::Value route_flag;
  dsl::Value w_ld;        // ptr<bf16> [LAT, H]
  dsl::Value w_gu;        // ptr<bf16> [2 SI, H]: gate rows, then up rows
  dsl::Value w_sd;        // ptr<bf16> [H, SI]
  dsl::Value w13, w13_scale;  // ptr<u8> [E, 2 Ir, LAT / 2], [E, 2 Ir, LAT / 32]
  dsl::Value w2, w2_scale;    // ptr<u8> [E, LAT, Ir / 2], [E, LAT, Ir / 32]
  dsl::Value norm_w;      // ptr<bf16> [LAT] (unused without the norm)
  dsl::Value w_up;        // ptr<bf16> [up_rows, LAT]
  // Scratch: lat, normed bf16 [T, LAT]; act bf16 [T, SI]; shared bf16 [T, H]; sorted, union_ids
  // i32 [T top_k]; union_count i32 [1]; inter bf16 [T top_k, T, Ir]; partials i32 [chunks, T, LAT]
  // (f32 bits: stage I's chunk partials, chunks = ceil(T top_k / routed_chunk)). With mxfp4_words,
  // lat's and inter's rows hold their elements in mxfp4_x_position's order.
  dsl::Value lat, normed, act, shared, sorted, union_ids, union_count, inter, partials;
  // lat and inter as i32 words (bf16 pairs, mxfp4_gemv.h's x_pairs): views of the same bytes.
  dsl::Value lat_pairs, inter_pairs;
  // With front_parts > 1: f32 bits as i32 [front_parts, T, LAT + 2 SI], D's and E's K parts (E's
  // gate rows, then its up rows), and a counter per row block (front_blocks: D's, then E's), never
  // reset (handoff.h's arrive).
  dsl::Value front_partials, block_counters;
  // With chunk_handoff: i32 [chunks] each, never reset (handoff.h's count_arrival).
  dsl::Value chunk_counters, chunk_flags;
  dsl::Value counters, flags;  // 7 words each: lat, act, shared, union, inter, normed, partial
  K2Clock clock;               // ticks at the ends of D..K (k2_clock.h; none in a plain build)
};

// Union slots a routed-sum task covers, for `slots` = T top_k possible union entries: at most
// `chunks` chunks (K2Build::routed_chunks), so that the final pass sums few partials; at 32, K3's
// 28 blocks of 128 latent rows give 32 x 28 = 896 tasks, about 7 per program on 132 SMs, each 2 to 8
// expert GEMVs of 24 KB.
int routed_chunk(int slots, int chunks);

// What every launch adds to a chunk's counter of H tasks (K2Build::chunk_handoff): the least power
// of two covering a chunk's H tasks at `max_slots` (the most tokens a rank serves times top_k).
int routed_chunk_span(int max_slots, int chunks, int expert_rows);

// The longest chunk stage I takes through shared memory (K2Build::routed_stages): each step selects
// its expert among the chunk's ids, read before the loop, by a chain of that many selects.
inline constexpr int kMaxStagedChunk = 16;

// The most H tasks of a program one staged loop takes (K2Build::expert_task_loop): each iteration
// selects its task's expert among the ids read before the loop by a chain of that many selects.
inline constexpr int kMaxLoopedTasks = 16;

// The K parts D's and E's tasks take (K2Build::front_parts = 0) for `hidden` in GEMV steps of
// `step`: 3 where each part keeps at least 8 steps, else fewer. A 64-row task streams at about an
// SM's share of the copy bandwidth (the H100's stage clock: 917 KB, K3's 28 steps, in 40 us), so
// K3 TP 8's 56 latent and 24 shared row blocks, whole, kept 80 programs busy 40 us while the other
// 44 waited for them; in thirds they are 240 tasks of 9 or 10 steps, at most two a program on 124.
int front_parts_for(int64_t hidden, int step);

// Stage H's K step over the latent (its gate and up rows' MXFP4 GEMV): the widest up to gemv_step
// whose decoded tile fits a task's registers (mxfp4_step_elements), halved until the loop runs
// min_k_steps times (looped_step). 128 at K3.
int expert_gate_up_step(int64_t latent, int gemv_step, bool pairs, int min_k_steps);

// Row blocks D and E hand in (their counters in MoeRows::block_counters): LAT / latent_rows, then
// SI / 32.
int front_blocks(int latent, int latent_rows, int shared_rows);

// Health-record regions of the MoE's waits (after K2Region's).
inline constexpr int32_t kMoeRegion = 7;

void moe_rows(const MoeRows& rows, Exchange& latent, Exchange& final_sum, const HandoffContext& context);

// The SiTU activation (k3_layer.md 5.3): beta tanh(g / beta) sigmoid(g) lb tanh(u / lb).
dsl::Value situ(const dsl::Value& gate, const dsl::Value& up, float beta, float linear_beta);

}  // namespace monotile::kernels::k3
