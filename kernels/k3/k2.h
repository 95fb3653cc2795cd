// K2, the second launch of a KDA layer and the only one of an MLA layer: from o_proj's input `core`
// to the layer's MoE output, as one persistent DSL program over every SM (k3_layer.md 2.2 steps 2-5,
// 5; the seed's `layer_post`). Its stages, each a task loop handed on through tagged flags in a
// scratch buffer (handoff.h):
//   A. o_proj: a = core W_o^T, 64-row GEMV tasks (gemv_task.h), through an Exchange (exchange.h;
//      TP 1: LocalExchange) into a [T, H];
//   B. the MLP AttnRes (attn_res_stage.h) with a as the delta: P' = bf16(P + a) stored in place (at a
//      block-write layer the prefix restarts: P' = a), the mix over the blocks (the one K1 just wrote
//      included), post_attention_layernorm -> y [T, H];
//   C. the router (router_stage.h): f32 logits, top-k of sigmoid + correction bias, weights;
//   D-K. the latent MoE (moe_stage.h): the latent, the shared experts, the union of chosen experts,
//      their MXFP4 slices with SiTU, the routed sum through the latent Exchange, the routed RMSNorm,
//      the up-projection added to the shared partial through the final Exchange -> out [T, H], the
//      next layer's pending delta.
// The overlap, as the stage clock (k2_clock.h) shows it at K3 TP 8 on an H100 (docs/perf.md): W_o
// streams in A; B (AttnRes) streams almost nothing; the logits' W_gate streams on most programs
// while C's top-k runs on one program a token, then D's and E's weights on every program but the
// route rows, the top-k and G (the union) running under them; H's w13 and then I's w2 stream on
// every program, F's W_sd on the programs H leaves idle (NVIDIA: shared_early) and each chunk's I
// tasks as soon as its own H tasks are done (chunk_handoff); the tail (the chunk sums, J's norm,
// K's W_up and the exchanges) runs with HBM mostly idle. No expert byte is asked for before the
// route and the latent are both done (points "G union" and "H ready").
// With dependent_launch, each program asks L2 for its W_o rows and a share of W_gate before it
// waits for K1's end, on the SMs K1's finished programs free (the clock's start is after the wait).
// Layer 0's dense MLP is not served yet (k2_build refuses it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dsl/ir.h"
#include "dsl/target.h"
#include "kernels/k3/mxfp4_gemv.h"
#include "model/config.h"
#include "support/source_location.h"

namespace monotile::kernels::k3 {

// Every parameter that changes K2's code; besides, the layer's place among the MLP AttnRes blocks
// (nblocks, reset): launch values, not code. k2_name leaves them out, the program takes them as its
// parameters `nblocks` and `reset`, and the builds of layers that differ only in them are one
// kernel.
struct K2Build {
  int hidden = 7168;      // H
  int core_width = 1536;  // o_proj's input columns on this rank (KDA: NHl x 128)
  int tokens = 4;         // T, at most 16
  int nblocks = 1;        // launch value: MLP AttnRes block sources before the prefix (the block K1 wrote included)
  bool reset = false;     // launch value: a block-write layer, the prefix restarts at a
  int max_blocks = 15;    // code: the most block sources a launch may pass (k2_build: the model's)
  float eps = 1e-5f;      // mlp_res_norm
  float out_eps = 1e-5f;  // post_attention_layernorm
  int experts = 896;
  int top_k = 16;
  bool renormalize = true;
  float scaling = 1.0f;   // routed_scaling_factor
  int latent = 3584;      // routed_expert_hidden_size
  int expert_rows = 384;  // Ir: this rank's intermediate rows of an expert
  int shared_rows = 768;  // this rank's shared-expert intermediate
  int up_first = 0;       // this rank's first routed_expert_up_proj row
  int up_rows = 896;      // its up-projection rows
  bool latent_norm = true;      // latent_moe_use_norm
  float situ_beta = 4.0f, situ_linear_beta = 25.0f;
  int64_t wait_ns = 10'000'000'000;
  // The ranks K2's three reductions span (o_proj's, the routed latent's, the final one): 1 sums
  // this rank's partials alone (LocalExchange; also a rank run alone, the others stood in), 2..8
  // exchanges them with every rank of the group over the peer buffers (PeerExchange,
  // peer_exchange.h), `rank` being this one. Set by the executor from its group, not by k2_build;
  // above 1 the name ends "_tp{tp}r{rank}" and the program takes every rank's peer buffer.
  int tp = 1;
  int rank = 0;
  int num_warps = 8;
  int gemv_step = 256;
  // K steps the gate-and-up GEMVs (the shared experts' two, the routed experts' paired one) run at
  // least where K allows (mxfp4_gemv.h's looped_step): on NVIDIA 2, since with a single step ptxas
  // overlaps the shared experts' two GEMVs; on AMD 1, since LLVM unrolls two steps anyway and their
  // narrower tiles spill more.
  int min_k_steps = 2;
  // The routed experts' GEMVs (stages H and I) decode each weight byte into one word of two bf16 at
  // once (Mxfp4Gemv::pairs: bf16x2 FMA on NVIDIA), about a quarter fewer instructions a K step than
  // one f32 a nibble; false keeps the f32 decode (the name then ends "_fp").
  bool mxfp4_pairs = true;
  // With mxfp4_pairs: four weight bytes decoded a word at a time (Mxfp4Gemv::words), a quarter fewer
  // instructions a K step than a byte at a time on NVIDIA (SASS of the GEMV's loop); the latent and
  // the experts' activations are then stored in the order that decode gives K (mxfp4_x_position).
  // False decodes a byte at a time: the name then ends "_bp".
  bool mxfp4_words = true;
  // With mxfp4_words: the routed experts' tasks whose scale codes allow it decode at one bf16x2
  // multiply a word instead of two (Mxfp4Gemv::scale_bias; kMxfp4ScaleBias). 0 always takes the
  // exact decode: the name then ends "_sb0"; another value ends "_sb{-bias}".
  int mxfp4_scale_bias = kMxfp4ScaleBias;
  // With mxfp4_words: the routed experts' nibbles put into bf16's places by the two-copy multiply
  // (dsl::Mxfp4Placement::kCopies: 12 integer operations a packed word in SASS instead of 15); true
  // takes the two shifts a word instead (kShifts; the values are the same), and the name ends "_ps".
  bool mxfp4_shift_placement = false;
  // K steps of the routed experts' weight loads in flight while one decodes (Mxfp4Gemv::ahead, 1 to
  // kMxfp4MaxAhead): each step ahead holds a thread's 32 bytes in registers. Other than 2, the name
  // ends "_a{n}".
  int expert_ahead = 2;
  // The routed experts' token dim (Mxfp4Gemv::token_rows): 16, or 8 on NVIDIA up to 8 tokens
  // (k2_for_target; the name then ends "_n8").
  int expert_token_rows = 16;
  // The routed experts' x words loaded with their weights, expert_ahead K steps before use
  // (Mxfp4Gemv::x_ahead): K2's shared memory leaves L1 little room, so x comes from L2. It costs 16
  // registers a step ahead at 8 token rows, 32 at 16 (where k3-tiny's K2 then spills on sm_90a):
  // k2_for_target takes it with the 8 rows. True: the name ends "_xa".
  bool expert_x_ahead = false;
  // The routed experts' GEMVs ask L2 for their weights this many K steps past their loads
  // (Mxfp4Gemv::prefetch_steps; 0: none). k2_for_target takes 2 on NVIDIA up to 8 tokens (H100:
  // K2 2% and 6% faster at T 4 and 8 than none, the same at 16; 4 and 8 steps no better). A task
  // that asked for all of its weights at its start instead made K2 7%, 8% and 15% slower at T 4, 8
  // and 16. Other than 0, the name ends "_pf{n}".
  int expert_prefetch_steps = 0;
  // The bytes L2 fetches around each of the routed experts' weight loads (Mxfp4Gemv::l2_fetch: 0,
  // 64, 128 or 256). k2_for_target takes 128 on NVIDIA past 8 tokens (H100: K2 3% faster at T 16;
  // at T 4 and 8, beside the prefetch 2 steps on, it changes nothing). Other than 0, the name ends
  // "_l2f{bytes}".
  int expert_l2_fetch = 0;
  // Stage I's tasks: per 128 latent rows, at most this many chunks of the union, each chunk's experts
  // one pipelined sum (moe_stage.h's routed_chunk). Fewer chunks make fewer, longer tasks (at T 4 and
  // 32 chunks a task is 2 experts, 49 KB). Other than 32, the name ends "_rc{n}".
  int routed_chunks = 32;
  // D's latent rows a task (moe_stage.h): a task's K loop is a chain of dependent steps whose time
  // hardly depends on its rows, so 64 rows make half the tasks at about the same time each (K3 TP 8
  // on an H100: K2 6%, 3% and 2% faster at T 4, 8 and 16 than with 32). Other than 64, the name
  // ends "_lr{n}".
  int latent_rows = 64;
  // The K parts of D's and E's tasks (moe_stage.h): 0 takes front_parts_for(hidden, gemv_step), 3
  // at K3 (each part at least 8 steps; H100: K2 2.5% and 1.2% faster at T 4 and 8 than whole
  // blocks, the same at 16). Another value ends the name "_kp{n}"; each part keeps at least
  // min_k_steps of E's steps.
  int front_parts = 0;
  // The route's rows read their candidates in one round trip and ask for every candidate's score
  // before their sort, whose steps cover that trip, rather than for the winners' logits after it
  // (router_stage.h RouterRows::scores_ahead). k2_for_target turns it off on AMD, where it kept up
  // to 124 SGPRs in VGPR lanes (gfx90a, K3 TP 8 T 8; the bound is 104). Off, the name ends "_sa0".
  bool route_scores_ahead = true;
  // Stage H's MXFP4 GEMV with its packed words and x copied through shared memory this many stages
  // (Mxfp4Gemv::stages: 2 to 8; 0 keeps the register pipeline of expert_ahead steps). It then
  // loads x in its own step (expert_x_ahead has no effect). k2_for_target takes 4 on NVIDIA past 8
  // tokens (with routed_stages, below). Other than 0, the name ends "_es{n}".
  int expert_stages = 0;
  // With expert_stages: stage H's K steps each shared-memory stage copies at once and each loop
  // iteration decodes (Mxfp4Gemv::stage_steps, 1 to kMxfp4MaxStageSteps). At K3, 2 makes each stage
  // 128 bytes of a row (a whole line) and 16 KB a program: the stages - 1 stages in flight then hold
  // twice the weight bytes (32 KB a program at 3 stages, 48 KB at 4) with no register held for them,
  // and a barrier every 16 KB instead of 8; the dots keep their 128-wide steps. H then asks L2 for
  // nothing ahead (expert_prefetch_steps is I's alone): its copies run further ahead than that.
  // Other than 1, the name ends "_ew{n}".
  int expert_stage_steps = 1;
  // Stages H's and I's staged loops (expert_stages, routed_stages) load each iteration's scale
  // codes in the iteration before and carry them in registers (Mxfp4Gemv::codes_ahead), instead of
  // waiting for them after each stage's barrier. True: the name ends "_ec".
  bool expert_codes_ahead = false;
  // The bytes L2 fetches around each asynchronous copy of stages H's and I's staged loops
  // (expert_stages, routed_stages; their Mxfp4Gemv::l2_fetch: 64, 128 or 256; 0 none, as before):
  // with stages of one or two K steps (64 or 128 bytes of a row), 256 brings the row's next steps
  // into L2 with this one, in flight for no register, request slot or shared memory of the SM.
  // expert_l2_fetch stays the register pipelines' (it never reached a staged copy). Other than 0,
  // the name ends "_sf{n}".
  int expert_stage_fetch = 0;
  // With expert_stages: each program's first H tasks, up to this many (1 to kMaxLoopedTasks; 0 a
  // loop a task, as before), as one staged loop over all their K steps (mxfp4_gemv_tasks): the
  // copies run on across the tasks' boundaries, so that a task's first stages are in flight while
  // the one before decodes its last, where a loop a task waited a memory round trip at each task's
  // start and ran its last stages with nothing in flight. Its experts' ids are read before the loop
  // (a register each); the tasks past them take a loop a task. One program an SM at K3 TP 8 holds
  // up to 3, 6 and 10 live tasks at T 4, 8 and 16. Other than 0, the name ends "_et{n}".
  int expert_task_loop = 0;
  // Each program's first H task asks L2 for the first this many K steps of its gate and up rows as
  // soon as the route's union is known, before its wait for the latent (D), which the route's end
  // precedes by 14-25 us at K3 TP 8 on an H100 (the stage clock): the experts' first bytes are then
  // asked for while D and E still stream theirs (0 none; up to stage H's K steps, 28 at K3: the whole
  // task, 229 KB a program). Other than 0, the name ends "_ef{n}".
  int expert_first_fetch = 0;
  // Every program asks L2 for an equal share of the rank's W_up lines (6.4 MB at K3 TP 8) before
  // stage H's waits, kept last (evict_last) while the experts stream: K's up-projection, whose 64-row
  // tasks (14 at K3 TP 8, 458 KB each) each streamed from memory on one program at the layer's end,
  // then reads from L2 (the route-independent weights of the first lever). True: the name
  // ends "_ua".
  bool up_ahead = false;
  // Stage I's MXFP4 sums likewise (2 to 8; 0 keeps the register pipeline): each chunk's expert ids
  // are read before its loop, so that a step's addresses are known stages - 1 steps ahead; a chunk
  // is then at most kMaxStagedChunk slots. k2_for_target takes 4 on NVIDIA (H100, K3 TP 8: K2 0.9%
  // and 1.7% faster at T 4 and 8; with expert_stages 4 as well, 8.1% at T 16). Other than 0, the
  // name ends "_rs{n}".
  int routed_stages = 0;
  // Stage F (the shared experts' down-projection) between H and I, taken first by the programs with
  // the fewest H tasks, instead of after I and the routed norm (H100, K3 TP 8: K2 1.0%, 1.4% and
  // 1.0% faster at T 4, 8 and 16); k2_for_target takes it on NVIDIA. True: the name ends "_fe".
  bool shared_early = false;
  // Stage I's tasks wait for the H tasks of their own chunk's experts (a counter and a flag a chunk),
  // not for every H task: the programs with fewer H tasks start I while the others finish H (H100,
  // K3 TP 8: K2 2.4%, 1.8% and 0.6% faster at T 4, 8 and 16); k2_for_target takes it on NVIDIA.
  // True: the name ends "_ch".
  bool chunk_handoff = false;
  // Shared-memory stages of K2's pipelined dots (its bf16 GEMVs'; KernelOptions::num_stages): 0
  // takes the most that fit (4 at K3), which leaves L1 about 20 KB for everything else;
  // k2_for_target takes 3 on NVIDIA (K3 TP 8 on an H100: 1.5%, 1.9% and 2.9% faster at T 4, 8 and
  // 16 than 4, and than 2). Other than 0, the name ends "_st{n}".
  int num_stages = 0;
  // The seed's fault hook (seed_source.md 3.7), for tests of the executor's fail-stop: when fault_ns
  // is not 0, program 0 of a launch whose epoch word equals fault_epoch and whose slot argument
  // equals fault_layer (128 + layer) spins on the global timer for fault_ns before its first stage,
  // so every other program's waits on its shares time out into the health words. 0 (the default)
  // leaves the code as it was; a nonzero value changes the code and the name.
  int32_t fault_epoch = 0;
  int32_t fault_layer = 0;
  int64_t fault_ns = 0;
  // Adds a last parameter `clock` (ptr<i64> [programs, kK2ClockPoints]): each program stores
  // global_timer() at its start and as it passes each stage's end (k2_clock.h's points; for
  // k2_bench --clock). The outputs are those of the build without it, bit for bit.
  bool stage_clock = false;
  // Programmatic dependent launch (dsl/memory.h): each program first lets the next kernel start on
  // the SMs this one frees (launch_dependents), asks L2 for its o_proj task's rows of W_o and its
  // equal share of the router's W_gate, and only then waits for the previous kernel's end
  // (wait_grid_dependency) before it reads anything a kernel writes (core, the prefix, blocks, the
  // epoch, flags). The launch then starts while K1's last programs run. On, the name ends "_pdl".
  bool dependent_launch = false;
  bool operator==(const K2Build&) const = default;
};

// The build of `layer` on the rank of `dims` whose o_proj input has `core_width` columns (KDA:
// dims.kda_projection), at `tokens` rows. Refused, with the value and what is expected: a layer
// outside the model, a layer without a latent MoE (layer 0's dense MLP), tokens outside 1..16, more
// than 15 MLP AttnRes sources (max_blocks is the model's block count, at most 15), a top-k outside 1..experts, a hidden size the GEMV step does not
// divide, an o_proj input that is not a multiple of 32 (o_proj steps through it by the largest power
// of two up to the GEMV step that divides it: k3-tiny's MLA layers at TP 2 have 128 columns).
absl::StatusOr<K2Build> k2_build(const model::ModelConfig& config, const model::RankDims& dims, int layer,
                                 int core_width, int tokens);

// The build for `target`: on AMD 4 wavefronts, 128-wide GEMV steps (as K1, k1.h), min_k_steps 1,
// the exact MXFP4 decode (mxfp4_scale_bias 0), D's and E's row blocks whole (front_parts 1) and the
// route's scores after its sort (route_scores_ahead false); on NVIDIA 3 pipeline stages, stage I's loads
// through 4 shared-memory stages, I's tasks by chunk (chunk_handoff), F between H and I
// (shared_early) and, up to 8 tokens, the experts' GEMVs 8 token rows wide, x
// loaded with their weights and L2 asked for the weights 2 steps on (not in a stage clock build of
// up to 4 tokens, where it spills: set stage_clock before); past 8 tokens, L2 fetching 128 bytes
// around each of their weight loads and stage H's loads through 4 shared-memory stages too.
K2Build k2_for_target(K2Build build, const dsl::Target& target);

// "k3_k2_h{H}_c{core}_t{T}_mb{max_blocks}_e{E}_k{top_k}_l{LAT}_i{Ir}_si{SI}_u{first}+{rows}_nw{warps}
// _s{step}_m{min_k_steps}", then "_fp" with the f32 decode (mxfp4_pairs false), "_bp" with pairs a
// byte at a time (mxfp4_words false), "_sb{-mxfp4_scale_bias}" when it is not kMxfp4ScaleBias, "_ps"
// with mxfp4_shift_placement, "_a{expert_ahead}"
// when it is not 2, "_n8" with 8 expert token rows, "_sa0" with the route's scores after its sort,
// then "_tp{tp}r{rank}" across ranks,
// "_f{fault_epoch}_{fault_layer}_{fault_ns}" with the fault hook,
// "_clock" with the stage clock, "_pdl" with dependent_launch, plus a hash of the scalars when they differ from the defaults.
std::string k2_name(const K2Build& build);

// The program. Parameters, in order:
//   core (ptr<bf16> [T, core_width]), w_o (ptr<bf16> [H, core_width]),
//   prefix (ptr<bf16> [T, H], updated in place), blocks (ptr<bf16>), blocks_token_stride,
//   blocks_block_stride (i64 elements: blocks[t, b, c]), nblocks (i32, 0..max_blocks), reset (i32, 1 at
//   a block-write layer), mlp_res_norm, mlp_res_proj, post_norm
//   (ptr<bf16> [H]), w_gate (ptr<bf16> [E, H]), gate_bias (ptr<f32> [E]),
//   w_ld (ptr<bf16> [LAT, H]), w_gu (ptr<bf16> [2 SI, H]), w_sd (ptr<bf16> [H, SI]),
//   w13, w13_scale, w2, w2_scale (ptr<u8>: [E, 2 Ir, LAT/2], [E, 2 Ir, LAT/32], [E, LAT, Ir/2],
//   [E, LAT, Ir/32]), latent_norm (ptr<bf16> [LAT]), w_up (ptr<bf16> [up_rows, LAT]),
//   out (ptr<bf16> [T, H]: the MoE output), route_experts (ptr<i32> [T, top_k]), route_weights
//   (ptr<f32> [T, top_k]), the scratch views of K2Scratch (a_rows, y_rows, ares, logits, lat,
//   latent_sum, normed, act, shared, sorted, union_ids, union_count, inter, flags, counters),
//   epoch (ptr<i32>), slot (i32: the tag slot, 128 + layer, < 256), health (ptr<i32>:
//   health_words(programs)), alarm (ptr<i32>)[, at tp > 1 for r in 0..tp-1: peer{r} (ptr<i32>),
//   rank r's peer buffer of peer_exchange_layout(tp, H, LAT).bytes() as this rank addresses it]
//   [, clock (ptr<i64>: stage_clock builds only)].
// Any number of resident programs may run it (one per SM is the intent).
dsl::Program k2_program(const K2Build& build, SourceLocation loc = SourceLocation::current());

std::vector<std::string> k2_parameters(const K2Build& build);

// K2's scratch, its own buffer (its control words must not be another kernel's): views each
// 256-byte aligned, the control words first ([0, zeroed_bytes) zero once, never reset).
struct K2Scratch {
  // i32 [44 + front_blocks (+ routed_chunks) + router_blocks]: AttnRes's 32, o_proj, logits, route,
  // latent sum, final sum, the MoE's 7, then D's and E's row blocks (moe_stage.h front_blocks; the
  // same for every width of a rank), then with chunk_handoff a word for each of stage I's chunks,
  // then the router's blocks of experts (router_stage.h router_blocks; the same for every width)
  int64_t counters = 0;
  int64_t flags = 0;  // i32, as many: AttnRes's 17 (to 31 unused), then as the counters (none for the blocks; the chunks' flags)
  int64_t zeroed_bytes = 0;
  int64_t ares = 0;        // f32: AttnRes's partials
  int64_t a_rows = 0;      // bf16 [T, H]: o_proj reduced
  int64_t y_rows = 0;      // bf16 [T, H]: the MLP AttnRes output
  int64_t logits = 0;      // f32 [router splits, T, E], then the route's candidates (router_scratch_floats)
  int64_t lat = 0;         // bf16 [T, LAT], then expert_token_rows - T rows read, never written
  int64_t latent_sum = 0;  // bf16 [T, LAT]: the routed sum reduced
  int64_t normed = 0;      // bf16 [T, LAT]
  int64_t act = 0;         // bf16 [T, SI]
  int64_t shared = 0;      // bf16 [T, H]
  int64_t sorted = 0, union_ids = 0, union_count = 0;  // i32 [T top_k], [T top_k], [1]
  // f32 bits as i32 [chunks, T, LAT]: the routed sum's chunk partials (moe_stage.h stage I). It has
  // no view of its own: the program reaches it from the union_count view, so that the launch's
  // parameter list (which runtime/k2_launch binds by name) stays as it is; it sits in the same buffer.
  int64_t routed_partials = 0;
  int64_t inter = 0;       // bf16 [T top_k, T, Ir], then expert_token_rows - T rows of Ir likewise
  // f32 bits as i32 [front parts, T, LAT + 2 SI] with more than one part (moe_stage.h), reached from
  // the union_count view as routed_partials is.
  int64_t front_partials = 0;
  int64_t bytes = 0;
};
K2Scratch k2_scratch(const K2Build& build);

// Region ids of K2's waits in health records.
// The peer regions (tp > 1) are the waits on another rank's share (the record's index: that rank).
enum class K2Region : int32_t {
  kAttnRes = 1,
  kDelta = 4,
  kRouterInput = 5,
  kRouterLogits = 6,
  kMoe = 7,
  kLatentSum = 8,
  kOProjPeers = 9,
  kLatentPeers = 10,
  kFinalPeers = 11
};

}  // namespace monotile::kernels::k3
