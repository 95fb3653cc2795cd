// K1 as one DSL program; the stage order and the hand-offs are described in k1.h.
#include "kernels/k3/k1.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "dsl/dsl.h"
#include "kernels/k3/attn_res_stage.h"
#include "kernels/k3/build_support.h"
#include "kernels/k3/gemv_task.h"
#include "kernels/k3/handoff.h"
#include "model/kernel_limits.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

constexpr int kHeadDim = 128;
constexpr int kConvWidth = 4;
constexpr int kMaxTokens = 16;
constexpr int kMaxQ = model::kKernelMaxQ;
// The state rows a KDA task owns: a quarter of a head, so that four programs share a head's
// recurrence and a task's state slice (32 x 128 fp32) stays in registers.
constexpr int kTaskRows = 32;
constexpr int kTasksPerHead = kHeadDim / kTaskRows;
constexpr float kL2NormEps = 1e-6f;
// K1Build::conv_state_split takes effect up to this q: at q 8 sm_90a spilled with each of its
// parts (t16 q8: 52 spill stores with all, 28 with the exact tiles alone; the default none).
constexpr int kMaxSplitFinishQ = 4;
// Clock points of a stage_clock build (k1.h): program start, stage A, B and C done, then in the
// program's last KDA task: its inputs ready, its recurrence done, its arrival (and the head's
// finish, when last) done.
constexpr int kClockPoints = kK1ClockPoints;
// Control words: counters and flags 0..31 are AttnRes's (attn_res_stage.h); flag 32 says the whole
// proj is written; counter 32 counts the in_proj tasks, counters 33.. the quarters of each
// (request, head).
constexpr int kAttnResWords = 2 * kMaxTokens;
constexpr int kProjFlag = kAttnResWords;
constexpr int kProjCounter = kAttnResWords;
constexpr int kHeadCounters = kAttnResWords + 1;
// The linear form's (K1Build::linear_in_proj) flags: "the sources' rows written" and "the mix's
// coefficients written"; its counters, one per width each, follow stream-K's (linear_counters).
constexpr int kSourcesFlag = kProjFlag + 1;
constexpr int kMixFlag = kProjFlag + 2;
constexpr int kFlags = kProjFlag + 3;
constexpr int kLinearCounters = 2 * kMaxTokens;
// Stream-K: at most this many programs share a row block (a program's run is at least half a row
// block's steps), which is also the span their counter grows by each launch.
constexpr int kMaxSegments = 3;
constexpr int kSegmentSpan = 4;
int row_block_counters(const K1Build& b) { return kHeadCounters + kMaxTokens / 2 * b.heads; }


int gemv_tasks(const K1Build& b) { return (b.in_proj_rows + b.gemv_rows - 1) / b.gemv_rows; }
int linear_counters(const K1Build& b) { return row_block_counters(b) + gemv_tasks(b); }

// The linear form's layout of the sources' rows: source s's token t at row s * block + t, the
// block the least power of two >= tokens (so that the accumulator's columns fold as [blocks, block]).
int linear_block(const K1Build& b) { return static_cast<int>(pow2_at_least(b.tokens)); }

// AttnRes's column chunk: the width's (attn_res_chunk), in the linear form at most that of 8 tokens
// (K3's 512): its first halves then take 1.75 rounds of 132 programs at 16 tokens, and their Gram
// matrix's operands 33 KB of shared memory beside the GEMV's stages (1024 columns took 64 KB, past
// sm_90a's 227 KB with 32 source rows).
int ares_chunk(const K1Build& b) {
  return attn_res_chunk(b.hidden, b.linear_in_proj ? std::min(b.tokens, 8) : b.tokens);
}

// AttnRes's partials: per (row, chunk) the Gram matrix and the dots.
int64_t attn_res_partial_floats(const K1Build& b) {
  return int64_t{b.tokens} * (b.hidden / ares_chunk(b)) * kAttnResPartials;
}

// The linear form's in_proj GEMV: W_in's rows times every source row (x_rows holds them).
GemvTask linear_gemv(const K1Build& b, const Value& w_in, const Value& sources) {
  return {.w = w_in, .x = sources, .k = b.hidden, .tokens = b.tokens, .rows = b.gemv_rows, .step = b.gemv_step,
          .ahead = 0, .sources = b.max_blocks + 1, .block = linear_block(b), .l2_fetch = b.gemv_l2_fetch};
}

void check(const K1Build& b, const SourceLocation& loc) {
  require(b.q >= 2 && b.q <= kMaxQ, loc, "k1_program", "q (tokens per request) must be in 2..8", "2..8",
          std::to_string(b.q), "q is num_spec + 1; K1 serves speculative decoding only");
  require(b.tokens >= b.q && b.tokens <= kMaxTokens && b.tokens % b.q == 0, loc, "k1_program",
          "tokens must be a multiple of q up to 16", "q, 2q, ... <= 16", std::to_string(b.tokens),
          "tokens is requests x q");
  require(b.state_len >= b.q + kConvWidth - 2, loc, "k1_program", "the conv state is too short for q", ">= q + 2",
          std::to_string(b.state_len), "allocate the conv state with num_spec + 3 entries or more");
  require(b.max_blocks >= 0 && b.max_blocks < kAttnResSources, loc, "k1_program", "max_blocks out of range", "0..15",
          std::to_string(b.max_blocks), "take it from k1_build");
  require(b.nblocks >= 0 && b.nblocks <= b.max_blocks && b.write_index >= -1, loc, "k1_program",
          "nblocks and write_index out of range", absl::StrCat("nblocks in 0..max_blocks (", b.max_blocks, ")"),
          std::to_string(b.nblocks), "take them from k1_build");
  require(b.heads >= 1 && b.in_proj_rows >= 4 * b.projection() + kHeadDim + b.heads, loc, "k1_program",
          "in_proj has too few rows for the heads", ">= 4 Pl + 128 + NHl", std::to_string(b.in_proj_rows),
          "pass the rank's merged in_proj row count");
  require(b.gemv_rows == 48 || b.gemv_rows == 64, loc, "k1_program", "gemv_rows must be 48 or 64", "48 or 64",
          std::to_string(b.gemv_rows), "k1_for_target chooses it");
  require(b.gemv_l2_fetch == 0 || b.gemv_l2_fetch == 64 || b.gemv_l2_fetch == 128 || b.gemv_l2_fetch == 256, loc,
          "k1_program", absl::StrCat("gemv_l2_fetch is ", b.gemv_l2_fetch, ", expected 0, 64, 128 or 256"),
          "0, 64, 128 or 256", std::to_string(b.gemv_l2_fetch),
          "the bytes L2 fetches around each W_in load (0: the target's own)");
  require(attn_res_chunk(b.hidden, b.tokens) > 0 && b.gemv_step >= 16 && b.hidden % b.gemv_step == 0, loc, "k1_program",
          "hidden must be a multiple of the GEMV step", "a multiple of " + std::to_string(b.gemv_step),
          std::to_string(b.hidden), "K3 models have hidden 7168; k1_for_target picks the step");
  const std::string linear = k1_linear_refusal(b);
  require(linear.empty(), loc, "k1_program", "the linear in_proj cannot take this build", "a build k1_linear_refusal accepts",
          linear, "build it without linear_in_proj (the default form)");
}

struct Args {
  Value prefix;
  std::optional<Value> delta;
  Value blocks, blocks_token_stride, blocks_block_stride, nblocks, write_index;
  Value ares_norm, ares_proj, in_norm, w_in, w_fb, conv_w;
  Value conv_state, conv_slot_stride, conv_channel_stride, conv_entry_stride;
  Value a_log, dt_bias, o_norm, state, state_slot_stride, state_indices, state_indices_stride, num_accepted;
  Value core;
  Value x_rows, proj, o_rows, ares, flags, counters;
  Value epoch, layer, health, alarm;
  std::optional<Value> next_weights, next_elements;
  std::optional<Value> clock;
};

void tick(const Args& a, int point) {
  if (a.clock) store(*a.clock + program_id(0) * kClockPoints + point, global_timer());
}

Args declare(Builder& b, const K1Build& build) {
  Args a;
  a.prefix = b.arg("prefix", ptr(bf16));
  if (build.delta) a.delta = b.arg("delta", ptr(bf16));
  a.blocks = b.arg("blocks", ptr(bf16));
  a.blocks_token_stride = b.arg("blocks_token_stride", i64, {.multiple_of = 8});
  a.blocks_block_stride = b.arg("blocks_block_stride", i64, {.multiple_of = 8});
  a.nblocks = b.arg("nblocks", i32);
  a.write_index = b.arg("write_index", i32);
  a.ares_norm = b.arg("ares_norm", ptr(bf16));
  a.ares_proj = b.arg("ares_proj", ptr(bf16));
  a.in_norm = b.arg("in_norm", ptr(bf16));
  a.w_in = b.arg("w_in", ptr(bf16));
  a.w_fb = b.arg("w_fb", ptr(bf16));
  a.conv_w = b.arg("conv_w", ptr(f32));
  a.conv_state = b.arg("conv_state", ptr(bf16));
  a.conv_slot_stride = b.arg("conv_slot_stride", i64);
  a.conv_channel_stride = b.arg("conv_channel_stride", i64);
  a.conv_entry_stride = b.arg("conv_entry_stride", i64);
  a.a_log = b.arg("a_log", ptr(f32));
  a.dt_bias = b.arg("dt_bias", ptr(f32));
  a.o_norm = b.arg("o_norm", ptr(bf16));
  a.state = b.arg("state", ptr(f32));
  a.state_slot_stride = b.arg("state_slot_stride", i64, {.multiple_of = 4});
  a.state_indices = b.arg("state_indices", ptr(i32));
  a.state_indices_stride = b.arg("state_indices_stride", i64);
  a.num_accepted = b.arg("num_accepted", ptr(i32));
  a.core = b.arg("core", ptr(bf16));
  a.x_rows = b.arg("x_rows", ptr(bf16));
  a.proj = b.arg("proj", ptr(bf16));
  a.o_rows = b.arg("o_rows", ptr(f32));
  a.ares = b.arg("ares", ptr(f32));
  a.flags = b.arg("flags", ptr(i32));
  a.counters = b.arg("counters", ptr(i32));
  a.epoch = b.arg("epoch", ptr(i32));
  a.layer = b.arg("layer", i32);
  a.health = b.arg("health", ptr(i32));
  a.alarm = b.arg("alarm", ptr(i32));
  if (build.prefetch_next) {
    a.next_weights = b.arg("next_weights", ptr(bf16));
    a.next_elements = b.arg("next_elements", i64);
  }
  if (build.stage_clock) a.clock = b.arg("clock", ptr(i64));
  return a;
}

// Stage A: AttnRes of every row (attn_res_stage.h); each x row published by its flag.
AttnResRows attn_res(const K1Build& b, const Args& a) {
  AttnResRows rows{.hidden = b.hidden,
                   .tokens = b.tokens,
                   .max_blocks = b.max_blocks,
                   .nblocks = a.nblocks,
                   .write_index = a.write_index,
                   .eps = b.eps,
                   .out_eps = b.out_eps,
                   .chunk = ares_chunk(b),
                   .prefix = a.prefix,
                   .delta = a.delta,
                   .reset = std::nullopt,
                   .delta_flag = std::nullopt,
                   .blocks = a.blocks,
                   .token_stride = a.blocks_token_stride,
                   .block_stride = a.blocks_block_stride,
                   .norm = a.ares_norm,
                   .proj = a.ares_proj,
                   .out_norm = a.in_norm,
                   .out = a.x_rows,
                   .partials = a.ares,
                   .counters = a.counters,
                   .flags = a.flags,
                   .clock = {}};
  return rows;
}

// While AttnRes's second half runs (K1Build::prefetch_weights): the first third of each W_in row
// of this program's first in_proj task, the K steps it reads first, comes into L2 (AttnRes's
// second half and its hand-off take about 9 us at K3 TP 8, in which the copy's bandwidth brings
// about 27 MB). The loop holds no register past an iteration: AttnRes's tile stays live across it.
void prefetch_in_proj(const K1Build& b, const Args& a) {
  if_(program_id(0) < gemv_tasks(b), [&] {
    auto first_row = program_id(0) * b.gemv_rows;
    const int64_t ahead = std::max<int64_t>(b.gemv_step, b.hidden / 3 / b.gemv_step * b.gemv_step);
    prefetch_row_heads(a.w_in + first_row.to(i64) * b.hidden, b.in_proj_rows - first_row, b.gemv_rows, b.hidden, ahead,
                       2);
  });
}

// K1Build::dependent_launch: the next kernel may start, this program's first weights come into L2,
// then the wait. Correct because after griddepcontrol.wait the previous kernel on the stream has
// completed and its memory writes are visible to this program (and, that kernel having waited for
// its own predecessor the same way or launched after it ended, so are every earlier kernel's); before
// the wait this program reads nothing (a prefetch reads no value), writes nothing, and W_in is
// written by no kernel. The next kernel's programs take an SM only as this kernel's programs leave
// it, and every program of this kernel is resident by then (all must have called
// launch_dependents), so the hand-offs between this kernel's programs still find them all running.
void dependent_start(const K1Build& b, const Args& a) {
  if (!b.dependent_launch) return;
  launch_dependents();
  prefetch_in_proj(b, a);
  wait_grid_dependency();
}

// In_proj's GEMV task: W_in's rows times x's.
GemvTask in_proj_gemv(const K1Build& b, const Args& a) {
  return {.w = a.w_in, .x = a.x_rows, .k = b.hidden, .tokens = b.tokens, .rows = b.gemv_rows, .step = b.gemv_step,
          .ahead = b.gemv_ahead, .l2_fetch = b.gemv_l2_fetch};
}

// Stage B: proj = bf16(x W_in^T), 64 rows of W_in a task on the matrix unit (gemv_task.h); each
// task's rows published by its flag.
void stage_in_proj(const K1Build& b, const Args& a, const HandoffContext& hc) {
  const int tasks = gemv_tasks(b);
  const GemvTask gemv = in_proj_gemv(b, a);
  if_(program_id(0) < tasks, [&] {
    wait_flag(attn_res_done_flag(attn_res(b, a)), static_cast<int32_t>(K1Region::kXRows), full({}, 0, i32), hc);
  });
  range(program_id(0), tasks, num_programs(0), [&](Value task) {
    auto rows = task * b.gemv_rows + arange(0, b.gemv_rows);
    auto ms = arange(0, gemv_padded_tokens(b.tokens, b.gemv_ahead));
    auto acc = gemv_task(gemv, task, b.in_proj_rows);
    store(a.proj + row(ms) * b.in_proj_rows + col(rows), acc.to(bf16), col(rows < b.in_proj_rows) & row(ms < b.tokens));
    arrive(a.counters + kProjCounter, tasks, a.flags + kProjFlag, hc);
  });
}

// Stage B as stream-K (K1Build::stream_k): the row blocks' K steps in one row-major sequence of
// units, an equal run of them a program (at least half a row block, so at most three programs share
// one). A program's run covers the tail of one row block and the head of the next (or, with few
// programs, whole blocks between); each part's f32 partial goes to its slot of the row block, and
// the last of the block's programs to arrive sums the slots in slot order (the same bits whatever
// the order of arrival), stores proj's rows and counts the block done.
void stage_in_proj_stream(const K1Build& b, const Args& a, const HandoffContext& hc) {
  const int blocks = gemv_tasks(b);
  const int steps = static_cast<int>(b.hidden / b.gemv_step);
  const int units = blocks * steps;
  const int64_t padded = gemv_padded_tokens(b.tokens, b.gemv_ahead);
  const GemvTask gemv = in_proj_gemv(b, a);
  auto per = maximum((units + num_programs(0) - 1) / num_programs(0), (steps + 1) / 2);
  auto u0 = program_id(0) * per;
  auto u1 = minimum(u0 + per, units);
  auto rs = arange(0, b.gemv_rows);
  auto ms = arange(0, padded);
  if_(u0 < units, [&] {
    wait_flag(attn_res_done_flag(attn_res(b, a)), static_cast<int32_t>(K1Region::kXRows), full({}, 0, i32), hc);
    range(u0 / steps, (u1 - 1) / steps + 1, 1, [&](Value block) {
      auto first = maximum(u0 - block * steps, 0), end = minimum(u1 - block * steps, steps);
      auto rows = block * b.gemv_rows + rs;
      auto acc = gemv_rows_span(gemv, rows, rows < b.in_proj_rows, first * b.gemv_step, end * b.gemv_step);
      auto first_program = block * steps / per;
      auto sharing = (block * steps + steps - 1) / per - first_program + 1;
      auto slots = a.ares + (block * kMaxSegments) * (b.gemv_rows * padded);
      store(slots + (program_id(0) - first_program) * (b.gemv_rows * padded) + col(rs) * padded + row(ms), acc);
      if_(count_arrival(a.counters + row_block_counters(b) + block, sharing, kSegmentSpan), [&] {
        fence(Order::acquire, Scope::gpu);
        std::vector<Value> parts;
        for (int j = 0; j < kMaxSegments; ++j) {  // every load in flight at once
          parts.push_back(load(slots + j * (b.gemv_rows * padded) + col(rs) * padded + row(ms), sharing > j));
        }
        Value sum = parts[0];
        for (int j = 1; j < kMaxSegments; ++j) sum = sum + parts[j];
        store(a.proj + row(ms) * b.in_proj_rows + col(rows), sum.to(bf16),
              col(rows < b.in_proj_rows) & row(ms < b.tokens));
        arrive(a.counters + kProjCounter, blocks, a.flags + kProjFlag, hc);
      });
    });
  });
}

// The linear form's stage A0 (K1Build::linear_in_proj): AttnRes's first halves over every program
// (attn_res_sources: the delta folded into the prefix, the block write, the partials), each also
// writing its chunk of every source times the input norm's weight, bf16, into x_rows at row
// s * block + t: the in_proj GEMV's operand. The product cannot be formed in the GEMV's loop: a
// staged dot takes its operands straight from memory. One hand-off for all of it.
void stage_sources(const K1Build& b, const Args& a, const HandoffContext& hc) {
  attn_res_sources(attn_res(b, a), hc,
                   {.rows = a.x_rows,
                    .block = linear_block(b),
                    .counter = a.counters + linear_counters(b) + (b.tokens - 1),
                    .flag = a.flags + kSourcesFlag,
                    .from_last = b.prefetch_weights});
}

// The linear form's stage B. AttnRes's programs (those past the in_proj tasks, or, with no such
// program, all of them first) wait for the sources and form each row's mix coefficients
// (attn_res_mix), then run any in_proj task of theirs. `before_tasks` runs once in every
// program after that and before its in_proj tasks (stage C's early inputs: held through the GEMV,
// not through the mix, whose partials' loads would spill beside them). An in_proj task streams W_in against
// every source row at once (acc [rows, blocks x block]: the sources' products W (w_norm * v_s)), and
// at its end waits for the coefficients and folds: proj[t] = bf16(sum_s a_{t,s} acc[s * block + t]).
void stage_in_proj_linear(const K1Build& b, const Args& a, const HandoffContext& hc,
                          const std::function<void()>& before_tasks) {
  const int tasks = gemv_tasks(b), block = linear_block(b);
  const GemvTask gemv = linear_gemv(b, a.w_in, a.x_rows);
  const int64_t blocks = gemv_padded_rows(gemv) / block;
  const Value coefficients = a.ares + attn_res_partial_floats(b);
  auto programs = num_programs(0);
  auto first_worker = where(programs > tasks, full({}, tasks, i32), full({}, 0, i32));
  const AttnResRows rows = attn_res(b, a);
  const Value sources_flag = a.flags + kSourcesFlag, mix_flag = a.flags + kMixFlag;
  // K1Build::prefetch_weights: each in_proj program's first rows come into L2 while the sources'
  // hand-off is awaited (the latest first half's), so that its stream starts before the hand-off;
  // stage_sources then gives its first halves to the last programs first (K3 at T 4: 56 of them on
  // programs 76-131), so that most in_proj programs ask at once.
  if (b.prefetch_weights) prefetch_in_proj(b, a);
  if_(program_id(0) >= first_worker, [&] {
    wait_flag(sources_flag, static_cast<int32_t>(K1Region::kSources), full({}, 0, i32), hc);
    attn_res_mix(rows, hc, program_id(0) - first_worker, programs - first_worker,
                 {.coefficients = coefficients,
                  .source_stride = block,
                  .counter = a.counters + linear_counters(b) + kMaxTokens + (b.tokens - 1),
                  .flag = mix_flag});
  });
  if_(program_id(0) < first_worker, [&] {
    wait_flag(sources_flag, static_cast<int32_t>(K1Region::kSources), full({}, 0, i32), hc);
  });
  tick(a, 1);
  before_tasks();
  auto ss = arange(0, blocks);
  auto ts = arange(0, block);
  range(program_id(0), tasks, programs, [&](Value task) {
    auto out_rows = task * b.gemv_rows + arange(0, b.gemv_rows);
    auto acc = gemv_task(gemv, task, b.in_proj_rows);
    wait_flag(mix_flag, static_cast<int32_t>(K1Region::kMix), full({}, 0, i32), hc);
    auto sources = (ss <= b.max_blocks) & (ss <= a.nblocks);
    auto mix = load(coefficients + col(ss) * block + row(ts), col(sources) & row(ts < b.tokens));
    auto folded = sum(reshape(acc, {b.gemv_rows, blocks, block}) * reshape(mix, {1, blocks, block}), 1);
    store(a.proj + row(ts) * b.in_proj_rows + col(out_rows), folded.to(bf16),
          col(out_rows < b.in_proj_rows) & row(ts < b.tokens));
    arrive(a.counters + kProjCounter, tasks, a.flags + kProjFlag, hc);
  });
}

// One KDA task's view of its request.
struct Request {
  Value n, accepted_index, conv_slot, read_slot;
  std::vector<Value> write_slots;  // after token t
  Value has_conv, has_state;
};

Request request(const K1Build& b, const Args& a, const Value& n) {
  Request r;
  r.n = n;
  auto slots = a.state_indices + n * a.state_indices_stride;
  r.accepted_index = load(a.num_accepted + n) - 1;
  r.conv_slot = load(slots);
  r.read_slot = load(slots + r.accepted_index);
  for (int t = 0; t < b.q; ++t) r.write_slots.push_back(load(slots + t));
  r.has_conv = r.conv_slot > 0;
  r.has_state = r.read_slot > 0;
  return r;
}

// Conv channel c's state entry e of the request's slot.
Value conv_entry(const Args& a, const Request& r, const Value& channels, const Value& entry) {
  return a.conv_state + r.conv_slot.to(i64) * a.conv_slot_stride + channels.to(i64) * a.conv_channel_stride +
         entry.to(i64) * a.conv_entry_stride;
}

// The conv inputs of `channels` that no stage of this launch writes: the state window (entries
// a .. a + 2 after the accepted token a, f32; zero without a conv slot) and the four taps.
struct ConvInputs {
  Value channels;
  std::vector<Value> window;
  std::array<Value, kConvWidth> taps;
};

// `real`, when given: false for a task past the last, whose loads are then not issued.
ConvInputs conv_inputs(const Args& a, const Request& r, const Value& channels, const std::optional<Value>& real) {
  ConvInputs c;
  c.channels = channels;
  const Value has_conv = real ? r.has_conv & *real : r.has_conv;
  for (int j = 0; j < kConvWidth - 1; ++j) {
    c.window.push_back(load(conv_entry(a, r, channels, r.accepted_index + j), has_conv).to(f32));
  }
  for (int j = 0; j < kConvWidth; ++j) {
    c.taps[j] = real ? load(a.conv_w + channels * kConvWidth + j, *real) : load(a.conv_w + channels * kConvWidth + j);
  }
  return c;
}

// The short causal conv (4.2) over the request's q tokens: per token the SiLU of the four taps on
// [state window, x_0 .. x_t], rounded to bf16; zero without a conv slot.
std::vector<Value> conv(const K1Build& b, const Args& a, const Request& r, const ConvInputs& in) {
  std::vector<Value> seq = in.window;
  for (int t = 0; t < b.q; ++t) {
    seq.push_back(load(a.proj + (r.n * b.q + t) * b.in_proj_rows + in.channels).to(f32));
  }
  std::vector<Value> out;
  for (int t = 0; t < b.q; ++t) {
    Value acc = in.taps[0] * seq[t];
    for (int j = 1; j < kConvWidth; ++j) acc = acc + in.taps[j] * seq[t + j];
    out.push_back(where(r.has_conv, (acc * sigmoid(acc)).to(bf16).to(f32), 0.0f));
  }
  return out;
}

Value l2_normalized(const Value& x) { return x * rsqrt(sum(x * x) + kL2NormEps); }

// Row t of a [rows, n] tile as an [n] tile.
Value row_of(const Value& tile, int t) {
  auto rows = arange(0, tile.shape()[0]);
  return sum(where(col(rows == t), tile, 0.0f), 0);
}

// The weights of head h's decays: W_fb's head block [128, 128], a_log[h] and the head's dt_bias.
struct DecayWeights {
  Value w_fb, a_log, dt_bias;
};

DecayWeights decay_weights(const Args& a, const Value& h) {
  auto kk = arange(0, kHeadDim);
  return {.w_fb = load(a.w_fb + col(h * kHeadDim + kk) * kHeadDim + row(kk)),
          .a_log = load(a.a_log + h),
          .dt_bias = load(a.dt_bias + h * kHeadDim + kk)};
}

// The per-token decay exp(gate) [q][128] of head h (4.3): g = bf16(f_a W_fb^T) on the matrix unit.
// `weights`: loaded before (K1Build::kda_weights_ahead); otherwise loaded here.
std::vector<Value> decays(const K1Build& b, const Args& a, const Request& r, const Value& h,
                          const std::optional<DecayWeights>& weights) {
  const int64_t padded = std::max<int64_t>(16, pow2_at_least(b.q));
  auto kk = arange(0, kHeadDim);
  auto ts = arange(0, padded);
  auto f_a = load(a.proj + col(r.n * b.q + ts) * b.in_proj_rows + 4 * b.projection() + row(kk), col(ts < b.q));
  // Without `weights`, in the order the default build has always emitted: W_fb, the dot, then
  // a_log and dt_bias.
  auto w_fb = weights ? weights->w_fb : load(a.w_fb + col(h * kHeadDim + kk) * kHeadDim + row(kk));
  auto g = dot(f_a, trans(w_fb)).to(bf16).to(f32);
  auto scale = exp(weights ? weights->a_log : load(a.a_log + h));
  auto bias = weights ? weights->dt_bias : load(a.dt_bias + h * kHeadDim + kk);
  // On the whole [padded, 128] tile, whose elements the threads share out, rather than a token's
  // row at a time, which every thread repeats: a quarter of the exp and sigmoid code at q = 4.
  auto decay = exp(b.lower_bound * sigmoid(scale * (g + row(bias))));
  std::vector<Value> out;
  for (int t = 0; t < b.q; ++t) out.push_back(row_of(decay, t));
  return out;
}

// What a KDA task reads that no stage of this launch writes (its request's metadata, its state
// slice, its conv windows and taps): loaded one task ahead, the first task's before the in_proj
// stage, so that their round trips hide behind the GEMV's stream or the task before.
struct KdaPrologue {
  Value n, h, vv, tile;
  Request r;
  Value S;
  ConvInputs q, k, v;
};

// The task's indices: nothing the loop needs to carry.
KdaPrologue kda_indices(const K1Build& b, const Value& task) {
  KdaPrologue p;
  p.n = task / (b.heads * kTasksPerHead);
  p.h = task / kTasksPerHead % b.heads;
  auto quarter = task % kTasksPerHead;
  p.vv = quarter * kTaskRows + arange(0, kTaskRows);
  p.tile = col(p.h * kHeadDim + p.vv).to(i64) * kHeadDim + row(arange(0, kHeadDim));
  return p;
}

// The channels of the task's q, k and v conv inputs.
std::array<Value, 3> conv_channels(const K1Build& b, const KdaPrologue& p) {
  auto kk = arange(0, kHeadDim);
  const int64_t pl = b.projection();
  return {p.h * kHeadDim + kk, pl + p.h * kHeadDim + kk, 2 * pl + p.h * kHeadDim + p.vv};
}

// Task `task`'s prologue (`real`, when given, false: a task past the last, clamped to it by the
// caller, whose loads are not issued; not given, every task is real, and the masks are as few as
// the registers of AMD's and q > 4's builds need). With `weights`, the weights that the task's first instructions read
// (W_fb's head rows, dt_bias) are asked into L2 as well (a loop's next task: they then come while
// the task before runs).
KdaPrologue kda_prologue(const K1Build& b, const Args& a, const Value& task, const std::optional<Value>& real,
                         bool weights) {
  KdaPrologue p = kda_indices(b, task);
  p.r = request(b, a, p.n);
  // The state slice's load goes first: it is the largest.
  const Value has_state = real ? p.r.has_state & *real : p.r.has_state;
  p.S = load(a.state + p.r.read_slot.to(i64) * a.state_slot_stride + p.tile, has_state, 0.0f,
             {.cache = Cache::streaming});
  const auto channels = conv_channels(b, p);
  p.q = conv_inputs(a, p.r, channels[0], real);
  p.k = conv_inputs(a, p.r, channels[1], real);
  p.v = conv_inputs(a, p.r, channels[2], real);
  if (weights) {
    // W_fb's head block is 128 rows of 128 bf16, 256 lines of 128 bytes: one a thread.
    constexpr int kLines = kHeadDim * kHeadDim * 2 / 128;
    prefetch(a.w_fb + p.h.to(i64) * (kHeadDim * kHeadDim) + arange(0, kLines).to(i64) * 64);
    prefetch(a.dt_bias + p.h * kHeadDim + arange(0, 4) * 32);
  }
  return p;
}

// The prologue's loaded values in a fixed order (a loop over tasks carries them), and back.
std::vector<Value> loaded_values(const KdaPrologue& p) {
  std::vector<Value> v{p.r.accepted_index, p.r.conv_slot, p.r.read_slot};
  v.insert(v.end(), p.r.write_slots.begin(), p.r.write_slots.end());
  v.push_back(p.S);
  for (const ConvInputs* c : {&p.q, &p.k, &p.v}) {
    v.insert(v.end(), c->window.begin(), c->window.end());
    v.insert(v.end(), c->taps.begin(), c->taps.end());
  }
  return v;
}

KdaPrologue with_loaded(const K1Build& b, const Value& task, const std::vector<Value>& v) {
  KdaPrologue p = kda_indices(b, task);
  const auto channels = conv_channels(b, p);
  size_t at = 0;
  p.r.n = p.n;
  p.r.accepted_index = v[at++];
  p.r.conv_slot = v[at++];
  p.r.read_slot = v[at++];
  for (int t = 0; t < b.q; ++t) p.r.write_slots.push_back(v[at++]);
  p.r.has_conv = p.r.conv_slot > 0;
  p.r.has_state = p.r.read_slot > 0;
  p.S = v[at++];
  ConvInputs* parts[3] = {&p.q, &p.k, &p.v};
  for (int part = 0; part < 3; ++part) {
    parts[part]->channels = channels[part];
    for (int j = 0; j < kConvWidth - 1; ++j) parts[part]->window.push_back(v[at++]);
    for (int j = 0; j < kConvWidth; ++j) parts[part]->taps[j] = v[at++];
  }
  return p;
}

// Whether K1Build::conv_state_split takes effect (up to q = 4).
bool splits_finish(const K1Build& b) { return b.conv_state_split && b.q <= kMaxSplitFinishQ; }

// K1Build::conv_state_split: the new conv state of `channels` (a [1, c] row of channel indices) as
// two tiles of exactly the entries written: entries 0 and 1 = old[a + 1], old[a + 2] (`kept`, f32
// values of the old entries, or loaded here), entries 2 .. q + 1 = x_0 .. x_{q-1} (a tile of the
// least power of two >= q rows). The one [pow2(q + 2), c] tile before computed every element's
// address from three run-time strides for rows that only a mask left out (8 for 6 at q 4; of its
// loads of old entries, 6 rows in 8). Loaded by conv_state_values, stored by store_conv_state.
struct ConvStateValues {
  Value channels, old, x;
};

ConvStateValues conv_state_values(const K1Build& b, const Args& a, const Request& r, const Value& channels,
                                  const std::optional<std::array<Value, 2>>& kept) {
  constexpr int kKept = kConvWidth - 2;  // old entries that stay
  auto ks = col(arange(0, kKept));
  auto ts = col(arange(0, pow2_at_least(b.q)));
  auto old = kept ? where(ks == 0, row((*kept)[0]), row((*kept)[1])).to(bf16)
                  : load(conv_entry(a, r, channels, r.accepted_index + 1 + ks), r.has_conv);
  return {.channels = channels, .old = old, .x = load(a.proj + (r.n * b.q + ts) * b.in_proj_rows + channels, ts < b.q)};
}

void store_conv_state(const K1Build& b, const Args& a, const Request& r, const ConvStateValues& v) {
  constexpr int kKept = kConvWidth - 2;
  auto ks = col(arange(0, kKept));
  auto ts = col(arange(0, pow2_at_least(b.q)));
  store(conv_entry(a, r, v.channels, ks), v.old, r.has_conv);
  store(conv_entry(a, r, v.channels, kKept + ts), v.x, (ts < b.q) & r.has_conv);
}

// Stage C, one task: a quarter of head h's state rows for request n, through all q tokens.
// `weights`: its decays' weights, loaded before the wait for proj (K1Build::kda_weights_ahead).
void kda_task(const K1Build& b, const Args& a, const KdaPrologue& p,
              const std::optional<DecayWeights>& weights = std::nullopt) {
  const int heads = b.heads;
  const int64_t pl = b.projection();
  const Value &h = p.h, &vv = p.vv, &tile = p.tile;
  const Request& r = p.r;
  Value S = p.S;
  auto kk = arange(0, kHeadDim);
  std::vector<Value> q_in = conv(b, a, r, p.q);
  std::vector<Value> k_in = conv(b, a, r, p.k);
  std::vector<Value> v_in = conv(b, a, r, p.v);
  std::vector<Value> decay = decays(b, a, r, h, weights);
  const float q_scale = 1.0f / std::sqrt(float(kHeadDim));
  // Every per-token input before the first state store: a streaming store is ordered like a
  // fence in the generated code, so a load after it would wait for the previous token's math.
  std::vector<Value> beta;
  for (int t = 0; t < b.q; ++t) {
    beta.push_back(sigmoid(load(a.proj + (r.n * b.q + t) * b.in_proj_rows + 4 * pl + kHeadDim + h).to(f32)));
  }
  // K1Build::conv_state_split (up to q = 4, splits_finish): the task's own v channels' new conv
  // state, their kept entries from its window (no other task reads these channels' state), before
  // the recurrence (held across it, the window spilled more).
  const bool split_finish = splits_finish(b);
  if (split_finish) {
    store_conv_state(b, a, r,
                     conv_state_values(b, a, r, row(2 * pl + h * kHeadDim + vv),
                                       std::array<Value, 2>{p.v.window[1], p.v.window[2]}));
  }
  tick(a, 4);
  for (int t = 0; t < b.q; ++t) {
    auto qn = l2_normalized(q_in[t]) * q_scale, kn = l2_normalized(k_in[t]);
    auto decayed = S * row(decay[t]);
    auto e = (v_in[t] - sum(decayed * row(kn), 1)) * beta[t];
    S = decayed + col(e) * row(kn);
    auto o = where(r.has_state, sum(S * row(qn), 1), 0.0f).to(bf16).to(f32);
    store(a.o_rows + ((r.n * heads + h) * b.q + t) * kHeadDim + vv, o);
    store(a.state + r.write_slots[t].to(i64) * a.state_slot_stride + tile, S, r.has_state & (r.write_slots[t] > 0),
          {.cache = Cache::streaming});
  }

  tick(a, 5);
  // The request's tokens as one [tokens, 128] tile's rows (made where they are used: the default's
  // code stays as it was).
  auto token_rows = [&] {
    auto ts = arange(0, pow2_at_least(b.q));
    return std::array<Value, 3>{ts, col(ts < b.q), col(r.n * b.q + ts)};
  };
  // Then what the head's finish reads that no other quarter writes (o_norm, the gate's rows, q and
  // k's old conv entries and new rows), loaded by every quarter before its arrival, whose round
  // trips they share.
  std::optional<Value> early_w, early_gate;
  std::vector<ConvStateValues> early_conv;
  if (split_finish) {
    auto [ts, real, tokens] = token_rows();
    early_w = load(a.o_norm + kk);
    early_gate = load(a.proj + tokens * b.in_proj_rows + 3 * pl + h * kHeadDim + row(kk), real);
    for (int part = 0; part < 2; ++part) {
      early_conv.push_back(conv_state_values(b, a, r, row(part * pl + h * kHeadDim + kk), std::nullopt));
    }
  }
  // The last quarter of the head to arrive finishes it: every quarter's o rows and its reads of the
  // old conv state are ordered before its arrival.
  if_(count_arrival(a.counters + kHeadCounters + r.n * heads + h, kTasksPerHead), [&] {
    fence(Order::acquire, Scope::gpu);
    // The request's tokens as one [tokens, 128] tile (plain loads, which the acquire covers): one
    // pass of the norm's and the gate's code for all of them, not one a token.
    auto [ts, real, tokens] = token_rows();
    auto w = (early_w ? *early_w : load(a.o_norm + kk)).to(f32);
    auto o = load(a.o_rows + ((r.n * heads + h) * b.q + col(ts)) * kHeadDim + row(kk), real);
    auto gate =
        (early_gate ? *early_gate : load(a.proj + tokens * b.in_proj_rows + 3 * pl + h * kHeadDim + row(kk), real))
            .to(f32);
    auto y = o * col(rsqrt(sum(o * o, 1) / float(kHeadDim) + b.onorm_eps)) * row(w) * sigmoid(gate);
    store(a.core + tokens * pl + h * kHeadDim + row(kk), y.to(bf16), real);
    // The head's new conv state: entries 0..q+1 = [old[a + 1], old[a + 2], x_0 .. x_{q-1}] for its
    // q, k and v channels (entries past q + 1 are left as they are), a part as one [entries, 128]
    // tile: its element addresses (any strides) are then computed once, not once an entry, which
    // made this the longest run of code on K1's critical path.
    if (split_finish) {
      for (const ConvStateValues& v : early_conv) store_conv_state(b, a, r, v);
      return;
    }
    const int kept = kConvWidth - 2;  // old entries that stay
    auto es = arange(0, pow2_at_least(b.q + kept));
    auto from_state = col(es < kept) & r.has_conv;
    auto from_proj = col((es >= kept) & (es < b.q + kept));
    auto x_rows = r.n * b.q + maximum(es - kept, 0);
    for (int part = 0; part < 3; ++part) {
      auto channels = row(part * pl + h * kHeadDim + kk);
      auto old = load(conv_entry(a, r, channels, col(r.accepted_index + 1 + es)), from_state);
      auto x = load(a.proj + col(x_rows) * b.in_proj_rows + channels, from_proj);
      store(conv_entry(a, r, channels, col(es)), where(from_state, old, x), (from_state | from_proj) & r.has_conv);
    }
  });
}

int kda_tasks(const K1Build& b) { return b.requests() * b.heads * kTasksPerHead; }

// Whether the build loads its first stage C inputs before stage B (K1Build::early_inputs).
bool loads_early_inputs(const K1Build& b) { return b.early_inputs && b.gemv_ahead == 0; }

// Whether a program's one stage C task has its decay weights loaded before the wait for proj
// (K1Build::kda_weights_ahead): only beside the early inputs, and not with kda_loop.
bool loads_kda_weights_ahead(const K1Build& b) {
  return b.kda_weights_ahead && loads_early_inputs(b) && !b.kda_loop;
}

// The prologue a program loads before stage B (K1Build::early_inputs): its first task's, none
// (no load issued) without a task.
KdaPrologue first_prologue(const K1Build& b, const Args& a) {
  return kda_prologue(b, a, minimum(program_id(0), kda_tasks(b) - 1), program_id(0) < kda_tasks(b), false);
}

// K1Build::prefetch_next: the programs with fewer stage C tasks than the first ones (those past
// tasks mod programs, or past the tasks when there are fewer tasks than programs; none when every
// program has as many) ask L2 for an equal share of the next weights' 128-byte lines, once stage B
// has ended (its weights then have the bandwidth to themselves).
void prefetch_next_weights(const K1Build& b, const Args& a, const HandoffContext& hc) {
  const int tasks = kda_tasks(b);
  auto programs = num_programs(0);
  auto busy = where(programs > tasks, full({}, tasks, i32), tasks % programs);
  auto sharers = programs - busy;
  if_((busy > 0) & (program_id(0) >= busy), [&] {
    if_(program_id(0) >= tasks, [&] {
      wait_flag(a.flags + kProjFlag, static_cast<int32_t>(K1Region::kProj), full({}, 0, i32), hc);
    });
    constexpr int kLineElements = 64;  // bf16 elements a line
    constexpr int kChunk = 256;
    auto lines = ((*a.next_elements + (kLineElements - 1)) / kLineElements).to(i32);
    auto share = (lines + sharers - 1) / sharers;
    auto first = (program_id(0) - busy) * share;
    auto end = minimum(first + share, lines);
    range(first, end, kChunk, [&](Value i0) {
      auto i = i0 + arange(0, kChunk);
      prefetch(*a.next_weights + i.to(i64) * kLineElements, i < end);
    });
  });
}

// A program's stage C tasks from `first` (its first task's prologue) in one loop, one copy of the
// task's code, so that a second task runs code the first has brought into the instruction cache
// (two rounds of tasks on an H100: 8% faster than a second copy); each iteration loads the next
// task's prologue at its end, and none after the last (a load still in flight when the program
// ends holds its end back).
void kda_loop(const K1Build& b, const Args& a, const KdaPrologue& first) {
  const int tasks = kda_tasks(b);
  range_carrying(program_id(0), tasks, num_programs(0), loaded_values(first),
                 [&](Value task, const std::vector<Value>& loaded) {
                   kda_task(b, a, with_loaded(b, task, loaded));
                   tick(a, 6);
                   auto next = task + num_programs(0);
                   // Past the last task, zeros: returning `loaded` would keep it live through the task.
                   return if_(
                       next < tasks,
                       [&] { return loaded_values(kda_prologue(b, a, next, std::nullopt, true)); },
                       [&] {
                         std::vector<Value> none;
                         for (const Value& v : loaded) none.push_back(zeros_like(v));
                         return none;
                       });
                 });
}

// Stage C. With early inputs (`first`) and a task or none a program, the task straight after the
// wait (in the loop, one round of tasks was 4-8% slower on an H100: K1Build::kda_loop); with more
// tasks than programs, the loop.
void stage_kda(const K1Build& b, const Args& a, const HandoffContext& hc, const std::optional<KdaPrologue>& first) {
  const int tasks = kda_tasks(b);
  auto wait_proj = [&] {
    wait_flag(a.flags + kProjFlag, static_cast<int32_t>(K1Region::kProj), full({}, 0, i32), hc);
  };
  if (first && loads_kda_weights_ahead(b)) {
    // K1Build::kda_weights_ahead: the task's decay weights in registers and o_norm's lines in L2
    // before the wait, so that after it the task's first round trip is proj's alone.
    if_(program_id(0) < tasks, [&] {
      if_(
          num_programs(0) >= tasks,
          [&] {
            const DecayWeights weights = decay_weights(a, first->h);
            prefetch(a.o_norm + arange(0, kHeadDim * 2 / 128) * 64);
            wait_proj();
            kda_task(b, a, *first, weights);
            tick(a, 6);
          },
          [&] {
            wait_proj();
            kda_loop(b, a, *first);
          });
    });
    if (b.prefetch_next) prefetch_next_weights(b, a, hc);
    return;
  }
  if_(program_id(0) < tasks, [&] {
    wait_proj();
    if (!first) {
      range(program_id(0), tasks, num_programs(0), [&](Value task) {
        kda_task(b, a, kda_prologue(b, a, task, std::nullopt, false));
        tick(a, 6);
      });
    } else if (b.kda_loop) {
      kda_loop(b, a, *first);
    } else {
      if_(num_programs(0) >= tasks, [&] {
        kda_task(b, a, *first);
        tick(a, 6);
      }, [&] { kda_loop(b, a, *first); });
    }
  });
  if (b.prefetch_next) prefetch_next_weights(b, a, hc);
}

}  // namespace

absl::StatusOr<K1Build> k1_build(const model::ModelConfig& config, int layer, int heads, int in_proj_rows,
                                 int tokens, int q, int state_len, bool delta) {
  auto refuse = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("k1 build for layer ", layer, ": ", what));
  };
  if (layer < 0 || layer >= config.num_hidden_layers || !config.is_kda_layer(layer)) {
    return refuse("not a KDA layer of the model (expected one of linear_attn_config.kda_layers, 1-based)");
  }
  if (config.kda_head_dim != kHeadDim) return refuse(absl::StrCat("head_dim ", config.kda_head_dim, ", expected 128"));
  if (config.conv_size != kConvWidth) {
    return refuse(absl::StrCat("short_conv_kernel_size ", config.conv_size, ", expected 4"));
  }
  if (q < 2 || q > kMaxQ) return refuse(absl::StrCat("q = ", q, ", expected 2..8 (num_spec + 1)"));
  if (tokens < q || tokens > kMaxTokens || tokens % q != 0) {
    return refuse(absl::StrCat("tokens = ", tokens, ", expected a multiple of q = ", q, " up to 16"));
  }
  if (state_len < q + kConvWidth - 2) {
    return refuse(absl::StrCat("conv state_len ", state_len, ", expected >= q + 2 = ", q + kConvWidth - 2));
  }
  K1Build b;
  b.hidden = static_cast<int>(config.hidden_size);
  b.heads = heads;
  b.in_proj_rows = in_proj_rows;
  b.tokens = tokens;
  b.q = q;
  b.nblocks = config.previous_blocks(layer);
  b.max_blocks = std::min(config.block_count(), kAttnResSources - 1);
  b.delta = delta;
  b.state_len = state_len;
  b.write_index = config.is_block_write_layer(layer) ? layer / config.attn_res_block_size : -1;
  b.eps = static_cast<float>(config.rms_norm_eps);
  b.out_eps = static_cast<float>(config.rms_norm_eps);
  b.lower_bound = static_cast<float>(config.gate_lower_bound);
  if (b.nblocks >= kAttnResSources) {
    return refuse(absl::StrCat(b.nblocks, " AttnRes block sources, expected <= ", kAttnResSources - 1));
  }
  if (attn_res_chunk(b.hidden, b.tokens) == 0 || b.hidden % b.gemv_step != 0) {
    return refuse(absl::StrCat("hidden_size ", b.hidden, ", expected a multiple of ", b.gemv_step));
  }
  if (heads < 1 || in_proj_rows < 4 * b.projection() + kHeadDim + heads) {
    return refuse(absl::StrCat(heads, " heads with ", in_proj_rows, " in_proj rows, expected >= 4 Pl + 128 + NHl"));
  }
  return b;
}

std::string k1_name(const K1Build& b) {
  std::string name = absl::StrCat("k3_k1_h", b.hidden, "_nh", b.heads, "_r", b.in_proj_rows, "_t", b.tokens, "_q", b.q,
                                  "_mb", b.max_blocks, "_d", b.delta ? 1 : 0, "_sl", b.state_len,
                                  "_nw", b.num_warps, "_k", b.gemv_step, "_g", b.gemv_rows, loads_early_inputs(b) ? "_e" : "",
                                  b.num_stages != 0 ? absl::StrCat("_st", b.num_stages) : "",
                                  b.gemv_l2_fetch != 0 ? absl::StrCat("_lf", b.gemv_l2_fetch) : "", b.stream_k ? "_sk" : "",
                                  b.gemv_ahead > 0 ? absl::StrCat("_a", b.gemv_ahead) : "",
                                  b.prefetch_weights ? "_pw" : "", b.prefetch_next ? "_pn" : "",
                                  b.kda_loop ? "_kl" : "", loads_kda_weights_ahead(b) ? "_kw" : "", splits_finish(b) ? "_cs" : "",
                                  b.linear_in_proj ? "_lin" : "",
                                  b.stage_clock ? "_clock" : "", b.dependent_launch ? "_pdl" : "");
  const K1Build defaults;
  if (b.eps != defaults.eps || b.out_eps != defaults.out_eps || b.onorm_eps != defaults.onorm_eps ||
      b.lower_bound != defaults.lower_bound || b.wait_ns != defaults.wait_ns) {
    name += scalar_suffix({b.eps, b.out_eps, b.onorm_eps, b.lower_bound}, {b.wait_ns});
  }
  return name;
}

std::string k1_linear_refusal(const K1Build& b) {
  if (!b.linear_in_proj) return "";
  std::vector<std::string> reasons;
  if (b.stream_k) reasons.push_back("stream-K's in_proj (its partials would carry every source's columns)");
  if (b.gemv_ahead != 0) reasons.push_back("gemv_ahead (the register path takes at most 16 x rows)");
  const int64_t rows = gemv_padded_rows(linear_gemv(b, {}, {}));
  if (rows > kK1LinearMaxRows) {
    reasons.push_back(absl::StrCat((b.max_blocks + 1), " sources x ", linear_block(b), " rows pad to ", rows,
                                   " accumulator columns, more than ", kK1LinearMaxRows));
  }
  return absl::StrJoin(reasons, "; ");
}

K1Build k1_linear_sized(K1Build build) {
  build.linear_in_proj = true;
  const int block = linear_block(build);
  const int64_t columns = std::max<int64_t>(8, pow2_at_least(build.nblocks + 1) * block);
  build.max_blocks = std::min<int>(build.max_blocks, static_cast<int>(columns / block) - 1);
  return build;
}

K1Build k1_for_target(K1Build build, const dsl::Target& target) {
  if (target.vendor() == dsl::Vendor::kAmd) {
    build.num_warps = 4;
    build.gemv_step = 128;
  }
  // Held through stage B, the early inputs cost about 16 registers a thread: at q = 8 sm_90a then
  // spilled (255 registers, 12 spill stores), and gfx90a went from at most 149 spills to 257.
  build.early_inputs = build.early_inputs && target.vendor() == dsl::Vendor::kNvidia && build.q <= 4;
  // 64-row in_proj tasks everywhere (K3's TP 8 rank: 99 tasks on 132 SMs). 48-row tasks would fit
  // them in one round, but their three m16 tiles do not split over 8 warps: every warp then
  // computes all three (dsl/lower/matrix_unit.cpp), unmeasured.
  return build;
}

Program k1_program(const K1Build& given, SourceLocation loc) {
  check(given, loc);
  // The launch values out of reach: the program is the same for every layer of the build.
  K1Build build = given;
  build.nblocks = K1Build{}.nblocks;
  build.write_index = K1Build{}.write_index;
  Builder b(k1_name(build), {.num_warps = build.num_warps, .num_stages = build.num_stages, .min_programs_per_sm = 1},
            loc);
  Args a = declare(b, build);
  dependent_start(build, a);
  HandoffContext hc{.tag = launch_tag(a.epoch, a.layer), .health = a.health, .alarm = a.alarm, .wait_ns = build.wait_ns};
  tick(a, 0);
  std::optional<KdaPrologue> first;
  if (build.linear_in_proj) {
    stage_sources(build, a, hc);
    stage_in_proj_linear(build, a, hc, [&] {
      if (loads_early_inputs(build)) first = first_prologue(build, a);
    });
    tick(a, 2);
    stage_kda(build, a, hc, first);
    tick(a, 3);
    return b.finish(loc);
  }
  std::function<void()> while_waiting;
  if (build.prefetch_weights) while_waiting = [&] { prefetch_in_proj(build, a); };
  attn_res_rows(attn_res(build, a), hc, while_waiting);
  tick(a, 1);
  if (loads_early_inputs(build)) first = first_prologue(build, a);
  if (build.stream_k) {
    stage_in_proj_stream(build, a, hc);
  } else {
    stage_in_proj(build, a, hc);
  }
  tick(a, 2);
  stage_kda(build, a, hc, first);
  tick(a, 3);
  return b.finish(loc);
}

std::vector<std::string> k1_parameters(const K1Build& build) {
  return parameter_names(k1_program(build));
}

K1Scratch k1_scratch(const K1Build& b) {
  K1Scratch s;
  ScratchLayout layout;
  auto take = [&](int64_t bytes) { return layout.take(bytes); };
  // The control words first, at offsets every width of the rank shares: a width's data never lands
  // where another width keeps a counter or a flag.
  s.counters = take(int64_t{linear_counters(b) + kLinearCounters} * 4);
  s.flags = take(int64_t{kFlags} * 4);
  s.zeroed_bytes = layout.size();
  const int64_t stream_partials =
      int64_t{gemv_tasks(b)} * kMaxSegments * b.gemv_rows * gemv_padded_tokens(b.tokens, b.gemv_ahead);
  // The linear form keeps its mix's coefficients after AttnRes's partials, and its sources' rows
  // (the GEMV's operand, blocks x block rows) where x's rows would be.
  const GemvTask linear = linear_gemv(b, {}, {});
  const int64_t mix_floats = b.linear_in_proj ? gemv_padded_rows(linear) : 0;
  s.ares = take(std::max(attn_res_partial_floats(b) + mix_floats, b.stream_k ? stream_partials : 0) * 4);
  s.x_rows = take((b.linear_in_proj ? gemv_padded_rows(linear) : int64_t{b.tokens}) * b.hidden * 2);
  s.proj = take(int64_t{b.tokens} * b.in_proj_rows * 2);
  s.o_rows = take(int64_t{b.requests()} * b.heads * b.q * kHeadDim * 4);
  s.bytes = layout.size();
  return s;
}

}  // namespace monotile::kernels::k3
