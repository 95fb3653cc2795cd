// One task of a decode GEMV whose weights are MXFP4 in the checkpoint's layout, read in place and
// dequantized in registers to bf16 for the matrix unit (Hopper, gfx90a and gfx942 have no FP4
// matrix instructions; gfx950's are a later step). The activations stay bf16 and the accumulation
// f32; ROCm's stock path instead quantizes the activations to MXFP4 too (k3_layer.md 5.3), so ours
// is the closer of the two to the float64 reference. K2's routed experts take their tasks from
// here.
//
// The weights are the dot's A operand and the tokens, padded to 16, its B: a task's 128 rows are
// then 8 tiles of the unit's 16 rows, one per warp, and each lane decodes the packed bytes it loads
// straight into its fragments (the lowering's fragment layouts, dsl/lower/matrix_unit.h), with no
// shared memory and no barrier in the K loop. (With the tokens as A, mma's A operand interleaves
// two token rows a register quad, which took a register move per word of x.) The accumulator is
// [rows, tokens] in the loop; the results are returned as [tokens, rows] (a transpose in
// registers).
#pragma once

#include <cstdint>
#include <functional>

#include "dsl/dot.h"
#include "dsl/ir.h"
#include "dsl/value.h"

namespace monotile::kernels::k3 {

struct Mxfp4Gemv {
  // ptr<u8> [N, k / 2], row-major: byte b of a row holds element 2b in its low nibble and 2b + 1 in
  // its high nibble; a nibble's bit 3 is the sign, bits 0..2 index {0, 0.5, 1, 1.5, 2, 3, 4, 6}.
  dsl::Value packed;
  dsl::Value scales;  // ptr<u8> [N, k / 32]: E8M0, 2^(code - 127) for 32 consecutive elements
  // ptr<i32> [tokens, k / 2]: the bf16 activations read as words, word j holding element 2j in its
  // low half and 2j + 1 in its high half (the order of a packed byte's nibbles).
  dsl::Value x_pairs;
  int64_t k = 0;   // a multiple of step
  int tokens = 0;  // at most token_rows
  // The token dim of the dot and of every result: kMxfp4Tokens, or 8 where tokens fit (NVIDIA's
  // mma.m16n8k16 takes 8 columns: half the dots and half of x's loads; AMD's MFMA needs 16).
  int token_rows = 16;
  int rows =
      128;  // weight rows a task takes: a multiple of 16 (128 gives each of 8 warps its own 16)
  int step = 256;  // K per step: a multiple of 32
  int ahead = 2;   // K steps whose loads are in flight while one decodes: 1 to kMxfp4MaxAhead
  // x_pairs has token_rows readable rows, whatever rows past `tokens` hold: they are loaded
  // without a mask (a masked row costs each thread a predicate and zeroed registers a step) and
  // reach only the result's rows past `tokens`, which the caller then must not use.
  bool x_padded = false;
  // Load x's words for a step with its weights, `ahead` steps before they are used, instead of in
  // the step itself: their latency (an L2 round trip where x does not stay in L1, as in K2 beside
  // its shared memory) then hides behind the steps in between, for 16 (8 token rows) or 32
  // registers a step ahead.
  bool x_ahead = false;
  // Decode each byte's two values into one word of two bf16 at once (mxfp4_pairs, bf16x2 FMA on
  // NVIDIA sm_80 and up) and dot them with x's words as they are, instead of one f32 per nibble
  // and x split into halves.
  bool pairs = false;
  // With pairs: read the packed bytes four a word and decode each word whole (mxfp4_word_pairs),
  // without taking it apart into bytes: about a third fewer instructions a weight byte on NVIDIA.
  // Its pairs hold each 8 values of a row in the order 0 4 1 5 2 6 3 7, so x_pairs must hold x in
  // that order too (mxfp4_x_position gives where each element goes).
  bool words = false;
  // With words: a task whose scale codes are all at most 128 - scale_bias (-126..-1; 0 turns this
  // off) decodes at one bf16x2 multiply a word instead of two: its weights come out as w x
  // 2^scale_bias (mxfp4_word_pairs' bias) and its f32 sums are multiplied back: the exact decode's
  // sums but for terms under 2^(-126 - scale_bias) (products the matrix unit's f32 may flush, and
  // weights under 2^(-132 - scale_bias), which round as bf16 subnormals). A task with a larger code
  // (a scale above 2^(1 - scale_bias), or NaN) gets sums that are not finite that way, and then
  // runs again with the exact decode.
  int scale_bias = 0;
  // With words: which instructions put each word's nibbles into bf16's places on NVIDIA
  // (dsl::Mxfp4Placement; the values are the same).
  dsl::Mxfp4Placement placement = dsl::Mxfp4Placement::kCopies;
  // Each step's loads also ask L2 for the packed bytes `prefetch_steps` steps past them (a prefetch
  // a row, no registers held; 0: none), so that a loop whose `ahead` register slots cannot cover
  // the memory's latency finds its weights in L2. The steps past the last ask for the last again.
  int prefetch_steps = 0;
  // The bytes L2 fetches around each weight load (AccessOptions::l2_fetch: 0, 64, 128 or 256). A
  // row's step is step / 2 bytes (64 at K2's step of 128), so 256 brings the next 3 steps of each
  // row into L2 with this one, without registers or request slots held for them. With stages, each
  // asynchronous copy of the packed words asks for them likewise.
  int l2_fetch = 0;
  // 0: the register pipeline above (ahead, x_ahead). 2 to 8: a plain loop over the K steps whose
  // packed words and x words are copied into shared memory `stages` - 1 steps ahead
  // (AccessOptions::stages; NVIDIA sm_80 and later, with words), holding no registers and asking
  // for whole 16-byte runs of each row; the scale codes are plain loads (a row's 4 a step, from
  // L1 after its first). In mxfp4_gemv_sum, each segment's pointers must then be computed from the
  // segment number and values defined before the loop (a staged load's address may not come from
  // memory read inside it).
  int stages = 0;
  // With stages, in mxfp4_gemv_rows: K steps each shared-memory stage copies at once and each loop
  // iteration decodes, one dot a step into two accumulators by turns (1 to kMxfp4MaxStageSteps,
  // dividing k / step). A stage then holds stage_steps x step / 2 bytes of each row (2 at a step of
  // 128: 128 bytes, a whole line), so the stages - 1 stages in flight hold that many times the
  // weight bytes, with no register held for them and a barrier a stage, while each dot keeps the
  // step whose decoded operand stays in registers (a dot over a wider step takes its operands
  // through shared memory). mxfp4_gemv_sum takes 1.
  int stage_steps = 1;
  // With stages: each iteration's scale codes (plain loads, a code a packed word) loaded by the
  // iteration before and carried in registers (4 a thread a K step at 8 warps and 128 rows),
  // instead of loaded in the iteration that decodes with them, where every iteration's decode
  // waits a round trip to L1 (or L2) after its stage's barrier whatever the stages' depth.
  bool codes_ahead = false;
};

// The most K steps a shared-memory stage of a GEMV copies at once (Mxfp4Gemv::stage_steps).
inline constexpr int kMxfp4MaxStageSteps = 4;

// Mxfp4Gemv::scale_bias for the K3 kernels: one multiply for scales up to 2^33 (real checkpoints
// stay far below), the exact decode's sums but for terms under 2^-94.
inline constexpr int kMxfp4ScaleBias = -32;

// Where element e of a row of x sits in x_pairs for a GEMV that decodes words (Mxfp4Gemv::words):
// each run of 8 in the order 0 4 1 5 2 6 3 7, so that word 4j + i of the row holds elements 8j + i
// and 8j + 4 + i, the values mxfp4_word_pairs puts in its word 4j + i.
constexpr int64_t mxfp4_x_position(int64_t e) {
  return (e & ~int64_t{7}) | ((e & 3) << 1) | ((e >> 2) & 1);
}
// The same for an i32 tile of element indices (for the kernels that write x).
dsl::Value mxfp4_x_position(const dsl::Value& e);

// The most tokens a GEMV takes (Mxfp4Gemv::token_rows' default): the matrix unit's 16 (MFMA
// 16x16x16, two of mma.m16n8k16's 8).
inline constexpr int kMxfp4Tokens = 16;

// The deepest load pipeline a GEMV takes (Mxfp4Gemv::ahead): each step ahead holds a thread's 16
// bytes and its scale in registers.
inline constexpr int kMxfp4MaxAhead = 4;

// One K step of rows `rows` (i32 [R]) as stored: packed bytes byte0 + [0, step / 2) (columns
// 2 byte0 + [0, step)) as u8 [R, step / 2], and each byte's scale code beside it (u8 [R, step / 2],
// equal over the 16 bytes of a group); with Mxfp4Gemv::words the same bytes as i32 words
// [R, step / 8] and a code a word. Each byte is read once, in 16-byte vectors where the layout
// allows, and each scale once per group; rows where `row_ok` is false read zero.
struct Mxfp4Packed {
  dsl::Value bytes;  // u8 bytes, or i32 words
  dsl::Value codes;
  // The step's x words (i32 [token_rows, step / 2]) where Mxfp4Gemv::x_ahead, else empty.
  dsl::Value x;
};
Mxfp4Packed mxfp4_load(const Mxfp4Gemv& g, const dsl::Value& rows, const dsl::Value& row_ok,
                       const dsl::Value& byte0);

// That step's weights as bf16 (exact: every MXFP4 value is a bf16), split by nibble so that nothing
// moves between threads: `low` [R, step / 2] holds columns 2 (byte0 + j), `high` columns
// 2 (byte0 + j) + 1.
struct Mxfp4Step {
  dsl::Value low;
  dsl::Value high;
};
Mxfp4Step mxfp4_decode(const Mxfp4Packed& packed);

// The accumulator [g.token_rows, rows] f32 (tokens past g.tokens zero) of the task whose first row
// is task * rows; rows past `n` read zero.
dsl::Value mxfp4_gemv_task(const Mxfp4Gemv& g, const dsl::Value& task, int64_t n);

// The same for any rows (i32 [g.rows]); rows where `row_ok` is false read zero.
dsl::Value mxfp4_gemv_rows(const Mxfp4Gemv& g, const dsl::Value& rows, const dsl::Value& row_ok);

// The largest power of two from max_step down to 32 that divides k (0 when none does): the K step
// of a GEMV over k.
int mxfp4_step(int64_t k, int max_step = 256);

// Dequantized weights a task holds per K step (rows x step): 32 a thread of 8 warps decoded one f32
// a nibble, 64 decoded in pairs (two a register; a thread's 32 bytes a step are then two 16-byte
// loads in flight a step ahead).
constexpr int mxfp4_step_elements(bool pairs) {
  return pairs ? 16384 : 8192;
}

// mxfp4_step's, halved (down to 32) until the K loop runs at least `min_steps` times where k
// allows. A task that runs two GEMVs (gate and up) over a single K step has no loop left, and ptxas
// overlaps the two, about doubling their registers (k3-tiny's H = 256 and LAT = 128 spilled on
// sm_90a).
int looped_step(int64_t k, int max_step, int min_steps);

// One GEMV of a weighted sum (mxfp4_gemv_sum): a segment's weights, scales and activations
// (g.packed, g.scales and g.x_pairs of that segment's GEMV).
struct Mxfp4Segment {
  dsl::Value packed;
  dsl::Value scales;
  dsl::Value x_pairs;
};

// The sum over segments j < count (i32 scalar, at least 1) of coef(j) (f32 [g.token_rows], one per
// token) times segment(j)'s GEMV on `rows` (i32 [g.rows]; rows where `row_ok` is false read zero),
// added in segment order: [g.token_rows, rows] f32. Every segment has g's shape (k, tokens, rows,
// step; g's pointers are not read). One software-pipelined loop over all the segments' K steps,
// g.ahead steps' loads in flight, so that a segment's first loads are in flight while the one
// before it decodes. K2's routed sum takes its union chunks' experts through here.
dsl::Value mxfp4_gemv_sum(const Mxfp4Gemv& g, const dsl::Value& rows, const dsl::Value& row_ok,
                          const dsl::Value& count,
                          const std::function<Mxfp4Segment(const dsl::Value&)>& segment,
                          const std::function<dsl::Value(const dsl::Value&)>& coef);

// One task of mxfp4_gemv_tasks: its rows (i32 [g.rows]; rows where row_ok is false read zero) and
// its GEMV's weights, scales and activations (Mxfp4Gemv's packed, scales and x_pairs).
struct Mxfp4Task {
  dsl::Value rows;
  dsl::Value row_ok;
  dsl::Value packed;
  dsl::Value scales;
  dsl::Value x_pairs;
};

// Tasks j < count (i32 scalar, at most 0: none) of g's shape (k, tokens, rows, step, stages,
// stage_steps, codes_ahead, scale_bias; g's pointers are not read), each task(j)'s GEMV, one after
// another as one staged loop over every task's iterations: the copies run `stages` - 1 iterations
// ahead across the tasks' boundaries, so that a task's first weights are in flight while the one
// before it decodes its last (a loop a task waits a memory round trip for each task's first stage
// and leaves its last ones with nothing in flight). At each task's last iteration done(j, acc)
// takes its accumulator [g.token_rows, g.rows] f32, as mxfp4_gemv_rows gives it. task(j)'s values
// must be computed by pure ops from j and values defined before the loop (a staged load's address
// may not come from memory read inside it). With scale_bias, a task whose codes do not allow it
// gets the exact decode's sums from a register pipeline (stages 0) in its done branch. For NVIDIA's
// staged loops (g.stages 2 to 8); no L2 prefetch a few steps on (g.prefetch_steps 0).
void mxfp4_gemv_tasks(const Mxfp4Gemv& g, const dsl::Value& count,
                      const std::function<Mxfp4Task(const dsl::Value&)>& task,
                      const std::function<void(const dsl::Value&, const dsl::Value&)>& done);

// A standalone GEMV over every task (for tests, resource reports and benchmarks): parameters
// packed (ptr<u8>), scales (ptr<u8>), x (ptr<i32> [tokens, k / 2]: bf16 pairs as above; with
// x_padded [token_rows, k / 2]), out (ptr<f32> [token_rows, n]: every task's accumulator); any
// number of programs.
// With words, x holds each run of 8 in mxfp4_x_position's order; scale_bias as Mxfp4Gemv's (the
// name then ends "_sb{-scale_bias}").
// prefetch_steps, l2_fetch, stages, stage_steps and codes_ahead as Mxfp4Gemv's (the name then ends
// "_pf{n}", "_l2f{bytes}", "_st{n}", "_ss{n}", "_ca"); placement likewise ("_ps" for kShifts).
// task_loop (with stages): each program's tasks as one loop (mxfp4_gemv_tasks; the name ends
// "_tl").
dsl::Program mxfp4_gemv_program(int64_t n, int64_t k, int tokens, int num_warps = 8, int step = 256,
                                int ahead = 2, bool pairs = false, bool x_padded = false,
                                int token_rows = kMxfp4Tokens, bool x_ahead = false,
                                bool words = false, int scale_bias = 0, int prefetch_steps = 0,
                                int l2_fetch = 0, int stages = 0,
                                dsl::Mxfp4Placement placement = dsl::Mxfp4Placement::kCopies,
                                int stage_steps = 1, bool codes_ahead = false,
                                bool task_loop = false);

}  // namespace monotile::kernels::k3
