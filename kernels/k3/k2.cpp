// K2 as one DSL program; the stage order and the hand-offs are described in k2.h.
#include "kernels/k3/k2.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "dsl/dsl.h"
#include "kernels/k3/attn_res_stage.h"
#include "kernels/k3/build_support.h"
#include "kernels/k3/exchange.h"
#include "kernels/k3/gemv_task.h"
#include "kernels/k3/handoff.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/k2_clock.h"
#include "kernels/k3/moe_stage.h"
#include "kernels/k3/mxfp4_gemv.h"
#include "kernels/k3/peer_exchange.h"
#include "kernels/k3/router_stage.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

constexpr int kMaxTokens = 16;
constexpr int kGemvRows = 64;
// Control words: AttnRes's counters and flags 0..31 (attn_res_stage.h), then one counter and one
// flag each for o_proj, the logits, the route, the latent sum and the final sum, then the MoE's seven.
constexpr int kAttnResWords = 2 * kMaxTokens;
constexpr int kOProjWord = kAttnResWords;
constexpr int kRouterWord = kAttnResWords + 1;
constexpr int kRouteWord = kAttnResWords + 2;
constexpr int kLatentSumWord = kAttnResWords + 3;
constexpr int kFinalSumWord = kAttnResWords + 4;
constexpr int kMoeWords = kAttnResWords + 5;
constexpr int kControlWords = kMoeWords + 7;

// D's and E's K parts (K2Build::front_parts resolved).
int front_parts(const K2Build& b) { return b.front_parts != 0 ? b.front_parts : front_parts_for(b.hidden, b.gemv_step); }

// Stage I's chunk words (K2Build::chunk_handoff), past D's and E's block counters.
int chunk_words(const K2Build& b) { return kControlWords + front_blocks(b.latent, b.latent_rows, b.shared_rows); }
// The router's block counters (router_stage.h), past the chunks' words.
int router_block_words(const K2Build& b) { return chunk_words(b) + (b.chunk_handoff ? b.routed_chunks : 0); }
int control_words(const K2Build& b) { return router_block_words(b) + router_blocks(b.experts, kGemvRows); }

// What every launch adds to a chunk's counter: a power of two covering the most H tasks a chunk can
// have at any width (the widths of a rank may share their counters, handoff.h's arrive).
int chunk_span(const K2Build& b) { return routed_chunk_span(kMaxTokens * b.top_k, b.routed_chunks, b.expert_rows); }

int64_t attn_res_partial_floats(const K2Build& b) {
  return int64_t{b.tokens} * (b.hidden / attn_res_chunk(b.hidden, b.tokens)) * kAttnResPartials;
}

void check(const K2Build& b, const SourceLocation& loc) {
  require(b.tokens >= 1 && b.tokens <= kMaxTokens, loc, "k2_program", "tokens out of range", "1..16", std::to_string(b.tokens),
          "K2 serves decode widths up to 16 rows");
  require(b.max_blocks >= 0 && b.max_blocks < kAttnResSources, loc, "k2_program", "max_blocks out of range", "0..15",
          std::to_string(b.max_blocks), "take it from k2_build");
  require(b.nblocks >= 0 && b.nblocks <= b.max_blocks, loc, "k2_program", "too many MLP AttnRes sources",
          absl::StrCat("nblocks in 0..max_blocks (", b.max_blocks, ")"), std::to_string(b.nblocks), "take it from k2_build");
  require(b.top_k >= 1 && b.top_k <= b.experts, loc, "k2_program", "top_k out of range", "1..experts", std::to_string(b.top_k),
          "take it from the config's num_experts_per_token");
  require(attn_res_chunk(b.hidden, b.tokens) > 0 && b.hidden % b.gemv_step == 0, loc, "k2_program",
          "hidden must be a multiple of the GEMV step", "a multiple of " + std::to_string(b.gemv_step),
          std::to_string(b.hidden), "k2_for_target picks the step");
  require(b.latent_rows >= 16 && b.latent_rows <= 128 && b.latent_rows % 16 == 0, loc, "k2_program",
          "latent_rows out of range", "16, 32, ..., 128 (the matrix unit's 16-row tiles)", std::to_string(b.latent_rows),
          "64 is the default; k2_bench --latent-rows times others");
  const int gate_up_steps = static_cast<int>(b.hidden / looped_step(b.hidden, b.gemv_step, b.min_k_steps));
  require(b.front_parts >= 0 && gate_up_steps / std::max(b.front_parts, 1) >= b.min_k_steps, loc, "k2_program",
          "front_parts out of range", absl::StrCat("0 (the default) or 1..", gate_up_steps / b.min_k_steps),
          std::to_string(b.front_parts), "each part of K keeps min_k_steps GEMV steps");
  require(b.expert_stages == 0 || (b.expert_stages >= 2 && b.expert_stages <= dsl::kMaxLoadStages), loc, "k2_program",
          "expert_stages out of range", absl::StrCat("0, or 2 to ", dsl::kMaxLoadStages), std::to_string(b.expert_stages),
          "0 keeps stage H's register pipeline");
  {
    // H's K steps a stage copies must tile the latent's steps (K2's H step: mxfp4_gemv.h's).
    const int h_steps = static_cast<int>(b.latent / expert_gate_up_step(b.latent, b.gemv_step, b.mxfp4_pairs, b.min_k_steps));
    const std::string expected =
        absl::StrCat("1, or 2 to ", kMxfp4MaxStageSteps, " dividing stage H's ", h_steps, " K steps, with expert_stages");
    const std::string actual = absl::StrCat(b.expert_stage_steps, " with expert_stages ", b.expert_stages);
    require(b.expert_stage_steps == 1 || (b.expert_stage_steps >= 2 && b.expert_stage_steps <= kMxfp4MaxStageSteps &&
                                          h_steps % b.expert_stage_steps == 0 && b.expert_stages != 0 && b.mxfp4_pairs &&
                                          b.mxfp4_words),
            loc, "k2_program", absl::StrCat("expert_stage_steps out of range: ", actual, ", expected ", expected), expected,
            actual, "wider copies are for stage H's staged loop: set expert_stages too");
  }
  require(!b.expert_codes_ahead || b.expert_stages != 0 || b.routed_stages != 0, loc, "k2_program",
          absl::StrCat("expert_codes_ahead without a staged loop: expert_stages ", b.expert_stages, ", routed_stages ",
                       b.routed_stages, ", expected either above 0"),
          "expert_stages or routed_stages above 0", absl::StrCat(b.expert_stages, " and ", b.routed_stages),
          "the codes come ahead in the staged loops: set expert_stages or routed_stages");
  {
    const std::string actual = absl::StrCat(b.expert_stage_fetch, " with expert_stages ", b.expert_stages,
                                            ", routed_stages ", b.routed_stages);
    const bool bytes = b.expert_stage_fetch == 0 || b.expert_stage_fetch == 64 || b.expert_stage_fetch == 128 ||
                       b.expert_stage_fetch == 256;
    require(bytes && (b.expert_stage_fetch == 0 || b.expert_stages != 0 || b.routed_stages != 0), loc, "k2_program",
            absl::StrCat("expert_stage_fetch out of range: ", actual,
                         ", expected 0, or 64, 128 or 256 with a staged loop"),
            "0, or 64, 128 or 256 with expert_stages or routed_stages above 0", actual,
            "the fetch is for the staged loops' copies: set expert_stages or routed_stages");
  }
  {
    const std::string actual = absl::StrCat(b.expert_task_loop, " with expert_stages ", b.expert_stages);
    require(b.expert_task_loop == 0 || (b.expert_task_loop >= 1 && b.expert_task_loop <= kMaxLoopedTasks &&
                                        b.expert_stages != 0 && b.mxfp4_pairs && b.mxfp4_words),
            loc, "k2_program",
            absl::StrCat("expert_task_loop out of range: ", actual, ", expected 0, or 1 to ", kMaxLoopedTasks,
                         " with expert_stages"),
            absl::StrCat("0, or 1 to ", kMaxLoopedTasks, " with expert_stages above 0"), actual,
            "one loop over the tasks is stage H's staged loop: set expert_stages too");
  }
  {
    const int h_steps = static_cast<int>(b.latent / expert_gate_up_step(b.latent, b.gemv_step, b.mxfp4_pairs, b.min_k_steps));
    require(b.expert_first_fetch >= 0 && b.expert_first_fetch <= h_steps, loc, "k2_program",
            absl::StrCat("expert_first_fetch out of range: ", b.expert_first_fetch, ", expected 0 to stage H's ", h_steps,
                         " K steps"),
            absl::StrCat("0 to ", h_steps), std::to_string(b.expert_first_fetch),
            "it counts K steps of a task's rows: its whole task is every step");
  }
  require(b.routed_stages == 0 || (b.routed_stages >= 2 && b.routed_stages <= dsl::kMaxLoadStages), loc, "k2_program",
          "routed_stages out of range", absl::StrCat("0, or 2 to ", dsl::kMaxLoadStages), std::to_string(b.routed_stages),
          "0 keeps stage I's register pipeline");
  const int chunk = routed_chunk(b.tokens * b.top_k, b.routed_chunks);
  require(b.routed_stages == 0 || chunk <= kMaxStagedChunk, loc, "k2_program", "routed_stages with chunks too long",
          absl::StrCat("at most ", kMaxStagedChunk, " union slots a chunk"), std::to_string(chunk),
          "a staged chunk selects its experts' addresses from ids read before its loop: raise routed_chunks");
  require(b.tp >= 1 && b.tp <= kMaxExchangeRanks && b.rank >= 0 && b.rank < b.tp, loc, "k2_program",
          "TP rank out of range", "tp in 1..8 and rank in 0..tp-1", absl::StrCat("tp ", b.tp, " rank ", b.rank),
          "the executor sets them from its group");
  require(mxfp4_step(b.core_width) > 0, loc, "k2_program", "core_width must be a multiple of 32", "a multiple of 32",
          std::to_string(b.core_width), "o_proj's K steps are powers of two from 32");
  require(mxfp4_step(b.latent) > 0 && mxfp4_step(b.expert_rows) > 0 && mxfp4_step(b.shared_rows) > 0, loc, "k2_program",
          "the latent, expert and shared widths must be multiples of 32", "multiples of 32",
          absl::StrCat(b.latent, ", ", b.expert_rows, ", ", b.shared_rows), "MXFP4 scales cover 32 elements");
}

struct Args {
  Value core, w_o, prefix, blocks, blocks_token_stride, blocks_block_stride, nblocks, reset;
  Value mlp_res_norm, mlp_res_proj, post_norm, w_gate, gate_bias;
  Value w_ld, w_gu, w_sd, w13, w13_scale, w2, w2_scale, latent_norm, w_up, out, route_experts, route_weights;
  Value a_rows, y_rows, ares, logits, lat, latent_sum, normed, act, shared, sorted, union_ids, union_count, inter;
  Value flags, counters;
  Value epoch, slot, health, alarm;
  std::vector<Value> peers;  // tp > 1: every rank's peer buffer
  K2Clock clock;
};

Args declare(Builder& b, const K2Build& build) {
  Args a;
  a.core = b.arg("core", ptr(bf16));
  a.w_o = b.arg("w_o", ptr(bf16));
  a.prefix = b.arg("prefix", ptr(bf16));
  a.blocks = b.arg("blocks", ptr(bf16));
  a.blocks_token_stride = b.arg("blocks_token_stride", i64, {.multiple_of = 8});
  a.blocks_block_stride = b.arg("blocks_block_stride", i64, {.multiple_of = 8});
  a.nblocks = b.arg("nblocks", i32);
  a.reset = b.arg("reset", i32);
  a.mlp_res_norm = b.arg("mlp_res_norm", ptr(bf16));
  a.mlp_res_proj = b.arg("mlp_res_proj", ptr(bf16));
  a.post_norm = b.arg("post_norm", ptr(bf16));
  a.w_gate = b.arg("w_gate", ptr(bf16));
  a.gate_bias = b.arg("gate_bias", ptr(f32));
  a.w_ld = b.arg("w_ld", ptr(bf16));
  a.w_gu = b.arg("w_gu", ptr(bf16));
  a.w_sd = b.arg("w_sd", ptr(bf16));
  a.w13 = b.arg("w13", ptr(u8));
  a.w13_scale = b.arg("w13_scale", ptr(u8));
  a.w2 = b.arg("w2", ptr(u8));
  a.w2_scale = b.arg("w2_scale", ptr(u8));
  a.latent_norm = b.arg("latent_norm", ptr(bf16));
  a.w_up = b.arg("w_up", ptr(bf16));
  a.out = b.arg("out", ptr(bf16));
  a.route_experts = b.arg("route_experts", ptr(i32));
  a.route_weights = b.arg("route_weights", ptr(f32));
  a.a_rows = b.arg("a_rows", ptr(bf16));
  a.y_rows = b.arg("y_rows", ptr(bf16));
  a.ares = b.arg("ares", ptr(f32));
  a.logits = b.arg("logits", ptr(f32));
  a.lat = b.arg("lat", ptr(bf16));
  a.latent_sum = b.arg("latent_sum", ptr(bf16));
  a.normed = b.arg("normed", ptr(bf16));
  a.act = b.arg("act", ptr(bf16));
  a.shared = b.arg("shared", ptr(bf16));
  a.sorted = b.arg("sorted", ptr(i32));
  a.union_ids = b.arg("union_ids", ptr(i32));
  a.union_count = b.arg("union_count", ptr(i32));
  a.inter = b.arg("inter", ptr(bf16));
  a.flags = b.arg("flags", ptr(i32));
  a.counters = b.arg("counters", ptr(i32));
  a.epoch = b.arg("epoch", ptr(i32));
  a.slot = b.arg("slot", i32);
  a.health = b.arg("health", ptr(i32));
  a.alarm = b.arg("alarm", ptr(i32));
  if (build.tp > 1) {
    for (int r = 0; r < build.tp; ++r) a.peers.push_back(b.arg(absl::StrCat("peer", r), ptr(i32)));
  }
  if (build.stage_clock) a.clock = K2Clock(b.arg("clock", ptr(i64)));
  return a;
}

// Stage A: o_proj's 64-row tasks, each handing its partial columns to the exchange.
void stage_o_proj(const K2Build& b, const Args& a, Exchange& exchange) {
  const int tasks = (b.hidden + kGemvRows - 1) / kGemvRows;
  const GemvTask gemv{.w = a.w_o, .x = a.core, .k = b.core_width, .tokens = b.tokens, .rows = kGemvRows,
                      .step = mxfp4_step(b.core_width, b.gemv_step)};
  range(program_id(0), tasks, num_programs(0), [&](Value task) {
    exchange.contribute(gemv_task(gemv, task, b.hidden), task * kGemvRows + arange(0, kGemvRows), task, tasks);
  });
}

// K2Build::dependent_launch: the next kernel may start, this program's first weights come into L2
// (its o_proj task's W_o rows, then an equal share of W_gate's lines, which the router reads after
// the MLP AttnRes), then the wait. Correct because after griddepcontrol.wait the previous kernel on
// the stream has completed and its memory writes are visible to this program (and, that kernel
// having waited for its own predecessor the same way or launched after it ended, so are every
// earlier kernel's); before the wait this program reads nothing (a prefetch reads no value), writes
// nothing, and no kernel writes W_o or W_gate. The next kernel's programs take an SM only as this
// kernel's leave it, and every program of this kernel is resident by then (all must have called
// launch_dependents), so the hand-offs between this kernel's programs still find them all running.
void dependent_start(const K2Build& b, const Args& a) {
  if (!b.dependent_launch) return;
  launch_dependents();
  const int tasks = (b.hidden + kGemvRows - 1) / kGemvRows;
  if_(program_id(0) < tasks, [&] {
    auto first_row = program_id(0) * kGemvRows;
    prefetch_row_heads(a.w_o + first_row.to(i64) * b.core_width, b.hidden - first_row, kGemvRows, b.core_width,
                       b.core_width, 2);
  });
  prefetch_share(a.w_gate, int64_t{b.experts} * b.hidden);
  wait_grid_dependency();
}

// The fault hook (K2Build::fault_ns): program 0 of the matching launch spins on the global timer
// before its first stage, so that the launch's waits on its shares give up.
void fault_hook(const K2Build& b, const Args& a) {
  if (b.fault_ns == 0) return;
  auto hit = (program_id(0) == 0) & (load(a.epoch, {.cache = Cache::volatile_}) == b.fault_epoch) & (a.slot == b.fault_layer);
  if_(hit, [&] {
    auto start = global_timer();
    while_(start, [&](Value now) { return now - start < b.fault_ns; }, [&](Value) { return global_timer(); });
  });
}

// One of K2's reductions: LocalExchange at tp 1, else PeerExchange over every rank's buffer.
std::unique_ptr<Exchange> make_exchange(const K2Build& build, const Args& a, ExchangeIndex index, const Value& out,
                                        int word, K2Region region, K2Region peer_region, const HandoffContext& hc) {
  const int64_t width = index == ExchangeIndex::kLatent ? build.latent : build.hidden;
  if (build.tp == 1) {
    return std::make_unique<LocalExchange>(
        LocalExchange::Buffers{.out = out, .counter = a.counters + word, .flag = a.flags + word}, build.tokens, width,
        static_cast<int32_t>(region), hc);
  }
  return std::make_unique<PeerExchange>(
      PeerExchange::Buffers{.buffers = a.peers,
                            .parity = load(a.epoch, {.cache = Cache::volatile_}) & 1,
                            .output = {.out = out, .counter = a.counters + word, .flag = a.flags + word}},
      peer_exchange_layout(build.tp, build.hidden, build.latent), index, build.rank, build.tokens,
      static_cast<int32_t>(region), static_cast<int32_t>(peer_region), hc);
}

}  // namespace

void K2Clock::tick(K2ClockPoint point) const {
  if (clock_) store(*clock_ + program_id(0) * kK2ClockPoints + static_cast<int>(point), global_timer());
}

void K2Clock::tick_if(const Value& when, K2ClockPoint point) const {
  if (clock_) if_(when, [&] { tick(point); });
}

absl::StatusOr<K2Build> k2_build(const model::ModelConfig& config, const model::RankDims& dims, int layer,
                                 int core_width, int tokens) {
  auto refuse = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("k2 build for layer ", layer, ": ", what));
  };
  if (layer < 0 || layer >= config.num_hidden_layers) {
    return refuse(absl::StrCat("not a layer of the model (0..", config.num_hidden_layers - 1, ")"));
  }
  if (!config.is_moe_layer(layer)) return refuse("its MLP is dense (layer 0), expected a latent MoE layer");
  if (tokens < 1 || tokens > kMaxTokens) return refuse(absl::StrCat("tokens = ", tokens, ", expected 1..16"));
  K2Build b;
  b.hidden = static_cast<int>(config.hidden_size);
  b.core_width = core_width;
  b.tokens = tokens;
  b.reset = config.is_block_write_layer(layer);
  b.nblocks = config.previous_blocks(layer) + (b.reset ? 1 : 0);
  b.max_blocks = std::min(config.block_count(), kAttnResSources - 1);
  b.eps = static_cast<float>(config.rms_norm_eps);
  b.out_eps = static_cast<float>(config.rms_norm_eps);
  b.experts = config.num_experts;
  b.top_k = config.num_experts_per_token;
  b.renormalize = config.moe_renormalize;
  b.scaling = static_cast<float>(config.routed_scaling_factor);
  b.latent = static_cast<int>(config.routed_expert_hidden_size);
  b.expert_rows = static_cast<int>(dims.expert_intermediate);
  b.shared_rows = static_cast<int>(dims.shared_intermediate);
  b.up_rows = static_cast<int>(dims.up_proj_rows);
  b.up_first = b.up_rows == b.hidden ? 0 : dims.rank * b.up_rows;
  b.latent_norm = config.latent_moe_use_norm;
  b.situ_beta = static_cast<float>(config.situ_beta);
  b.situ_linear_beta = static_cast<float>(config.situ_linear_beta);
  if (mxfp4_step(b.latent) == 0 || mxfp4_step(b.expert_rows) == 0 || mxfp4_step(b.shared_rows) == 0) {
    return refuse(absl::StrCat("latent ", b.latent, ", expert rows ", b.expert_rows, ", shared rows ", b.shared_rows,
                               ", expected multiples of 32"));
  }
  if (b.nblocks >= kAttnResSources) return refuse(absl::StrCat(b.nblocks, " MLP AttnRes block sources, expected <= 15"));
  if (b.top_k < 1 || b.top_k > b.experts) {
    return refuse(absl::StrCat("num_experts_per_token ", b.top_k, ", expected 1..", b.experts));
  }
  if (attn_res_chunk(b.hidden, b.tokens) == 0 || b.hidden % b.gemv_step != 0 || mxfp4_step(core_width) == 0) {
    return refuse(absl::StrCat("hidden_size ", b.hidden, " and o_proj input ", core_width, ", expected multiples of ",
                               b.gemv_step, " and 32"));
  }
  return b;
}

K2Build k2_for_target(K2Build build, const dsl::Target& target) {
  if (target.vendor() == dsl::Vendor::kAmd) {
    build.num_warps = 4;
    build.gemv_step = 128;
    build.min_k_steps = 1;
    // AMD decodes in f32 (no bf16x2 FMA): the biased decode saves no multiply there, and its
    // second loop costs K3's K2 about 56 VGPRs on gfx90a.
    build.mxfp4_scale_bias = 0;
    // Whole row blocks for D and E: their parts of K, each summed by the block's last, kept 116 to
    // 177 SGPRs in VGPR lanes at K3's widths on gfx90a (kAmdSgprSpillBound is 96).
    build.front_parts = 1;
    build.route_scores_ahead = false;
  }
  if (target.vendor() == dsl::Vendor::kNvidia) {
    build.num_stages = 3;
    // Stage I by chunk and F between H and I (H100, K3 TP 8: K2 2.4%, 1.8% and 0.6% faster at T 4, 8
    // and 16 with I by chunk alone; 1.0%, 1.4% and 1.0% with F moved alone).
    build.chunk_handoff = true;
    build.shared_early = true;
    // Stage I through 4 shared-memory stages at every width, and stage H too past 8 tokens (K3 TP 8
    // on an H100: K2 0.9% and 1.7% faster at T 4 and 8 with I's alone, 8.1% at T 16 with both; H's
    // is 0.4% slower at T 4 and 8 beside I's, and 8 stages are slower than 4 everywhere).
    build.routed_stages = 4;
    // A staged chunk holds at most kMaxStagedChunk union slots: past T top-k 512 (a top-k above 32
    // at 16 tokens), more chunks than the default.
    build.routed_chunks = std::max(build.routed_chunks, (build.tokens * build.top_k + kMaxStagedChunk - 1) / kMaxStagedChunk);
    if (build.tokens > 8) build.expert_stages = 4;
  }
  if (target.vendor() == dsl::Vendor::kNvidia && build.tokens <= 8) {
    build.expert_token_rows = 8;
    build.expert_x_ahead = true;
    // A stage clock build at up to 4 tokens (K2Gpu's, k2_bench --clock) spills with it on sm_90a.
    if (!build.stage_clock || build.tokens > 4) build.expert_prefetch_steps = 2;
  } else if (target.vendor() == dsl::Vendor::kNvidia) {
    build.expert_l2_fetch = 128;
  }
  return build;
}

std::string k2_name(const K2Build& b) {
  std::string name = absl::StrCat("k3_k2_h", b.hidden, "_c", b.core_width, "_t", b.tokens, "_mb", b.max_blocks,
                                  "_e", b.experts, "_k", b.top_k, "_l", b.latent, "_i", b.expert_rows,
                                  "_si", b.shared_rows, "_u", b.up_first, "+", b.up_rows, "_nw", b.num_warps, "_s",
                                  b.gemv_step, "_m", b.min_k_steps);
  if (!b.mxfp4_pairs) name += "_fp";
  if (b.mxfp4_pairs && !b.mxfp4_words) name += "_bp";
  if (b.mxfp4_scale_bias != kMxfp4ScaleBias) absl::StrAppend(&name, "_sb", -b.mxfp4_scale_bias);
  if (b.mxfp4_shift_placement) name += "_ps";
  if (b.expert_ahead != 2) absl::StrAppend(&name, "_a", b.expert_ahead);
  if (b.expert_token_rows != kMxfp4Tokens) absl::StrAppend(&name, "_n", b.expert_token_rows);
  if (b.expert_x_ahead) name += "_xa";
  if (b.expert_prefetch_steps != 0) absl::StrAppend(&name, "_pf", b.expert_prefetch_steps);
  if (b.expert_l2_fetch != 0) absl::StrAppend(&name, "_l2f", b.expert_l2_fetch);
  if (b.routed_chunks != K2Build{}.routed_chunks) absl::StrAppend(&name, "_rc", b.routed_chunks);
  if (b.latent_rows != K2Build{}.latent_rows) absl::StrAppend(&name, "_lr", b.latent_rows);
  if (b.expert_stages != 0) absl::StrAppend(&name, "_es", b.expert_stages);
  if (b.expert_stage_steps != 1) absl::StrAppend(&name, "_ew", b.expert_stage_steps);
  if (b.expert_codes_ahead) absl::StrAppend(&name, "_ec");
  if (b.expert_stage_fetch != 0) absl::StrAppend(&name, "_sf", b.expert_stage_fetch);
  if (b.expert_task_loop != 0) absl::StrAppend(&name, "_et", b.expert_task_loop);
  if (b.expert_first_fetch != 0) absl::StrAppend(&name, "_ef", b.expert_first_fetch);
  if (b.up_ahead) absl::StrAppend(&name, "_ua");
  if (b.routed_stages != 0) absl::StrAppend(&name, "_rs", b.routed_stages);
  if (b.shared_early) absl::StrAppend(&name, "_fe");
  if (b.chunk_handoff) absl::StrAppend(&name, "_ch");

  if (b.front_parts != 0 && b.front_parts != front_parts_for(b.hidden, b.gemv_step)) {
    absl::StrAppend(&name, "_kp", b.front_parts);
  }
  if (!b.route_scores_ahead) name += "_sa0";
  if (b.num_stages != 0) absl::StrAppend(&name, "_st", b.num_stages);
  if (b.tp > 1) absl::StrAppend(&name, "_tp", b.tp, "r", b.rank);
  if (b.fault_ns != 0) absl::StrAppend(&name, "_f", b.fault_epoch, "_", b.fault_layer, "_", b.fault_ns);
  if (b.dependent_launch) name += "_pdl";
  if (b.stage_clock) name += "_clock";
  const K2Build defaults;
  if (b.eps != defaults.eps || b.out_eps != defaults.out_eps || b.renormalize != defaults.renormalize ||
      b.scaling != defaults.scaling || b.wait_ns != defaults.wait_ns || b.latent_norm != defaults.latent_norm ||
      b.situ_beta != defaults.situ_beta || b.situ_linear_beta != defaults.situ_linear_beta) {
    name += scalar_suffix({b.eps, b.out_eps, b.scaling, b.situ_beta, b.situ_linear_beta},
                          {b.renormalize ? 1 : 0, b.latent_norm ? 1 : 0, b.wait_ns});
  }
  return name;
}

Program k2_program(const K2Build& given, SourceLocation loc) {
  check(given, loc);
  // The launch values out of reach: the program is the same for every layer of the build.
  K2Build build = given;
  build.nblocks = K2Build{}.nblocks;
  build.reset = K2Build{}.reset;
  Builder b(k2_name(build), {.num_warps = build.num_warps, .num_stages = build.num_stages, .min_programs_per_sm = 1},
            loc);
  Args a = declare(b, build);
  const K2Scratch scratch = k2_scratch(build);
  dependent_start(build, a);
  a.clock.tick(K2ClockPoint::kStart);
  fault_hook(build, a);
  HandoffContext hc{.tag = launch_tag(a.epoch, a.slot), .health = a.health, .alarm = a.alarm, .wait_ns = build.wait_ns};
  std::unique_ptr<Exchange> o_proj_exchange = make_exchange(build, a, ExchangeIndex::kOProj, a.a_rows, kOProjWord,
                                                            K2Region::kDelta, K2Region::kOProjPeers, hc);
  Exchange& o_proj = *o_proj_exchange;
  stage_o_proj(build, a, o_proj);
  a.clock.tick(K2ClockPoint::kOProj);
  AttnResRows mlp_res{.hidden = build.hidden,
                      .tokens = build.tokens,
                      .max_blocks = build.max_blocks,
                      .nblocks = a.nblocks,
                      .write_index = std::nullopt,
                      .eps = build.eps,
                      .out_eps = build.out_eps,
                      .prefix = a.prefix,
                      .delta = o_proj.out(),
                      .reset = a.reset,
                      .delta_flag = o_proj.done_flag(),
                      .blocks = a.blocks,
                      .token_stride = a.blocks_token_stride,
                      .block_stride = a.blocks_block_stride,
                      .norm = a.mlp_res_norm,
                      .proj = a.mlp_res_proj,
                      .out_norm = a.post_norm,
                      .out = a.y_rows,
                      .partials = a.ares,
                      .counters = a.counters,
                      .flags = a.flags,
                      .clock = a.clock};
  const RouterRows router{.hidden = build.hidden,
                           .tokens = build.tokens,
                           .experts = build.experts,
                           .top_k = build.top_k,
                           .renormalize = build.renormalize,
                           .scaling = build.scaling,
                           .gemv_rows = kGemvRows,
                           .gemv_step = build.gemv_step,
                           .scores_ahead = build.route_scores_ahead,
                           .y = a.y_rows,
                           .y_flag = attn_res_done_flag(mlp_res),
                           .w_gate = a.w_gate,
                           .bias = a.gate_bias,
                           .logits = a.logits,
                           .block_counters = a.counters + router_block_words(build),
                           .counter = a.counters + kRouterWord,
                           .flag = a.flags + kRouterWord,
                           .experts_out = a.route_experts,
                           .weights_out = a.route_weights,
                           .route_counter = a.counters + kRouteWord,
                           .route_flag = a.flags + kRouteWord,
                           .clock = a.clock};
  attn_res_rows(mlp_res, hc);
  a.clock.tick(K2ClockPoint::kAttnRes);
  router_rows(router, hc);
  a.clock.tick(K2ClockPoint::kRouter);
  std::unique_ptr<Exchange> latent = make_exchange(build, a, ExchangeIndex::kLatent, a.latent_sum, kLatentSumWord,
                                                   K2Region::kLatentSum, K2Region::kLatentPeers, hc);
  std::unique_ptr<Exchange> final_sum = make_exchange(build, a, ExchangeIndex::kFinal, a.out, kFinalSumWord,
                                                      K2Region::kMoe, K2Region::kFinalPeers, hc);
  moe_rows({.hidden = build.hidden,
            .tokens = build.tokens,
            .latent = build.latent,
            .experts = build.experts,
            .top_k = build.top_k,
            .expert_rows = build.expert_rows,
            .shared_rows = build.shared_rows,
            .up_first = build.up_first,
            .up_rows = build.up_rows,
            .latent_norm = build.latent_norm,
            .norm_eps = build.eps,
            .situ_beta = build.situ_beta,
            .situ_linear_beta = build.situ_linear_beta,
            .gemv_step = build.gemv_step,
            .min_k_steps = build.min_k_steps,
            .mxfp4_pairs = build.mxfp4_pairs,
            .mxfp4_words = build.mxfp4_words,
            .mxfp4_scale_bias = build.mxfp4_pairs && build.mxfp4_words ? build.mxfp4_scale_bias : 0,
            .mxfp4_placement = build.mxfp4_shift_placement ? dsl::Mxfp4Placement::kShifts : dsl::Mxfp4Placement::kCopies,
            .expert_ahead = build.expert_ahead,
            .x_ahead = build.expert_x_ahead,
            .prefetch_steps = build.expert_prefetch_steps,
            .l2_fetch = build.expert_l2_fetch,
            .routed_chunks = build.routed_chunks,
            .latent_rows = build.latent_rows,
            .front_parts = front_parts(build),
            .expert_stages = build.mxfp4_pairs && build.mxfp4_words ? build.expert_stages : 0,
            .expert_stage_steps = build.expert_stage_steps,
            .codes_ahead = build.expert_codes_ahead,
            .stage_fetch = build.expert_stage_fetch,
            .expert_task_loop = build.mxfp4_pairs && build.mxfp4_words && build.expert_stages != 0 ? build.expert_task_loop : 0,
            .expert_first_fetch = build.expert_first_fetch,
            .up_ahead = build.up_ahead,
            .routed_stages = build.mxfp4_pairs && build.mxfp4_words ? build.routed_stages : 0,
            .shared_early = build.shared_early,
            .chunk_handoff = build.chunk_handoff,
            .chunk_span = build.chunk_handoff ? chunk_span(build) : 0,
            .token_rows = build.expert_token_rows,
            .y = a.y_rows,
            .y_flag = attn_res_done_flag(mlp_res),
            .route_experts = a.route_experts,
            .route_weights = a.route_weights,
            .route_flag = a.flags + kRouteWord,
            .w_ld = a.w_ld,
            .w_gu = a.w_gu,
            .w_sd = a.w_sd,
            .w13 = a.w13,
            .w13_scale = a.w13_scale,
            .w2 = a.w2,
            .w2_scale = a.w2_scale,
            .norm_w = a.latent_norm,
            .w_up = a.w_up,
            .lat = a.lat,
            .normed = a.normed,
            .act = a.act,
            .shared = a.shared,
            .sorted = a.sorted,
            .union_ids = a.union_ids,
            .union_count = a.union_count,
            .inter = a.inter,
            .partials = a.union_count + (scratch.routed_partials - scratch.union_count) / 4,
            .lat_pairs = a.union_count + (scratch.lat - scratch.union_count) / 4,
            .inter_pairs = a.union_count + (scratch.inter - scratch.union_count) / 4,
            .front_partials = a.union_count + (scratch.front_partials - scratch.union_count) / 4,
            .block_counters = a.counters + kControlWords,
            .chunk_counters = a.counters + chunk_words(build),
            .chunk_flags = a.flags + chunk_words(build),
            .counters = a.counters + kMoeWords,
            .flags = a.flags + kMoeWords,
            .clock = a.clock},
           *latent, *final_sum, hc);
  return b.finish(loc);
}

std::vector<std::string> k2_parameters(const K2Build& build) {
  return parameter_names(k2_program(build));
}

K2Scratch k2_scratch(const K2Build& b) {
  K2Scratch s;
  ScratchLayout layout;
  auto take = [&](int64_t bytes) { return layout.take(bytes); };
  s.counters = take(int64_t{control_words(b)} * 4);
  s.flags = take(int64_t{control_words(b)} * 4);
  s.zeroed_bytes = layout.size();
  s.ares = take(attn_res_partial_floats(b) * 4);
  s.a_rows = take(int64_t{b.tokens} * b.hidden * 2);
  s.y_rows = take(int64_t{b.tokens} * b.hidden * 2);
  s.logits = take(router_scratch_floats(b.experts, b.hidden, b.tokens, b.top_k, kGemvRows, b.gemv_step) * 4);
  const int64_t slots = int64_t{b.tokens} * b.top_k;
  // lat and inter are the experts' GEMV activations, read expert_token_rows rows at a time without a
  // mask (Mxfp4Gemv::x_padded): each is followed by the rows a read past its last token reaches.
  const int64_t pad_rows = b.expert_token_rows - std::min(b.tokens, b.expert_token_rows);
  s.lat = take((int64_t{b.tokens} + pad_rows) * b.latent * 2);
  s.latent_sum = take(int64_t{b.tokens} * b.latent * 2);
  s.normed = take(int64_t{b.tokens} * b.latent * 2);
  s.act = take(int64_t{b.tokens} * b.shared_rows * 2);
  s.shared = take(int64_t{b.tokens} * b.hidden * 2);
  s.sorted = take(slots * 4);
  s.union_ids = take(slots * 4);
  s.union_count = take(4);
  const int64_t chunk = routed_chunk(static_cast<int>(slots), b.routed_chunks);
  s.routed_partials = take((slots + chunk - 1) / chunk * b.tokens * b.latent * 4);
  s.inter = take((slots * b.tokens + pad_rows) * b.expert_rows * 2);
  const int parts = front_parts(b);
  if (parts > 1) s.front_partials = take(int64_t{parts} * b.tokens * (b.latent + 2 * int64_t{b.shared_rows}) * 4);
  s.bytes = layout.size();
  return s;
}

}  // namespace monotile::kernels::k3
