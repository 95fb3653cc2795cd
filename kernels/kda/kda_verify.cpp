// The KDA spec-verify recurrence in the DSL. Latency shapes the program more than bandwidth at
// small batch: the state load is issued as soon as the slots arrive, everything else a request
// needs (q/k/v/g/beta for all q tokens, the gates and norms) is loaded and computed while it is in
// flight, the read slot is selected from the already loaded column values instead of a second
// dependent load, and per token the two reductions over K both read the decayed state, so they run
// side by side: o_t = (S' + e k^T) q = S' q + e (k . q).
#include "kernels/kda/kda_verify.h"

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "dsl/dsl.h"

namespace monotile::kernels::kda {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

bool power_of_two(int value) { return value > 0 && (value & (value - 1)) == 0; }

void require(bool ok, const SourceLocation& loc, const std::string& what, const std::string& expected,
             const std::string& actual, const std::string& hint) {
  if (!ok) throw Error(SourceLoc::from(loc), "kda_verify_program", what, expected, actual, hint);
}

// Two splits, measured on the H200 (132 SMs) at every harness shape: 32 rows on 4 warps (8 rows a
// warp, 160 registers: 3 blocks an SM) and 8 rows on 2 warps (4 rows a warp, 118 registers: 8
// blocks an SM). Every warp redoes its head's per-token work (norms, gate) for all 128 channels, so
// fewer rows a warp costs issue slots, while more rows a warp means fewer, fatter blocks and a
// ragged last wave. The choice: 32 rows from more than two of its waves, below that the split
// whose last wave is fuller (ties to 32 rows). At commit 4b7fd9b (run A) that picks the faster of
// the two at 13 of the 15 shapes and is within 1.3% at the other two (H=32, N=2 and 4); the fuller
// last wave alone had picked 8 rows at H=32, N=8 and 16, 5-6% slower. 16 rows on 4 warps, 64 on 8
// and 8 on 4 were never faster than the chosen split (1-50% slower).
struct Split {
  int block_v, num_warps, blocks_per_sm;
};
constexpr Split kWideSplit{32, 4, 3}, kNarrowSplit{8, 2, 8};
constexpr int kTunedSms = 132;

double waves(const Split& split, int64_t pairs) {
  return double(pairs * (kHeadDim / split.block_v)) / (kTunedSms * split.blocks_per_sm);
}

double wave_fill(const Split& split, int64_t pairs) {
  const double count = waves(split, pairs);
  return count / std::ceil(count);
}

Split choose_split(int heads, int requests) {
  const int64_t pairs = int64_t{heads} * requests;
  if (waves(kWideSplit, pairs) > 2) return kWideSplit;
  return wave_fill(kWideSplit, pairs) >= wave_fill(kNarrowSplit, pairs) - 0.01 ? kWideSplit : kNarrowSplit;
}

// Multi-row reductions take fewer instructions and two more dependent shuffle levels per reduction:
// at 8 rows a warp (16 shuffles instead of 40) they were 1-2.5% faster at commit 4b7fd9b, at 4 rows
// (9 instead of 20) a butterfly per row was 1-3% faster.
bool multi_row_pays(int block_v, int num_warps) {
  return block_v / num_warps >= 8;
}

Value l2_normalized(const Value& x) { return x * rsqrt(sum(x * x) + kL2NormEps); }

}  // namespace

KdaVerifyConfig resolve(KdaVerifyConfig config, SourceLocation loc) {
  require(config.heads >= 1, loc, "heads must be at least 1", ">= 1", std::to_string(config.heads),
          "pass the number of KDA heads on this rank");
  require(config.requests >= 1, loc, "requests must be at least 1", ">= 1", std::to_string(config.requests),
          "pass the number of requests in the batch");
  require(config.q >= 1 && config.q <= 8, loc, "q (tokens per request) must be in 1..8", "1..8",
          std::to_string(config.q), "q is num_spec + 1");
  if (config.block_v == 0) {
    const Split split = choose_split(config.heads, config.requests);
    config.block_v = split.block_v;
    if (config.num_warps == 0) config.num_warps = split.num_warps;
  }
  require(power_of_two(config.block_v) && config.block_v <= kHeadDim, loc,
          "block_v must be a power of two dividing " + std::to_string(kHeadDim), "1, 2, 4, ..., 128",
          std::to_string(config.block_v), "pass 0 to let the kernel choose");
  if (config.num_warps == 0) config.num_warps = config.block_v >= 4 ? 4 : config.block_v;
  require(power_of_two(config.num_warps) && config.num_warps <= 8, loc, "num_warps must be a power of two in 1..8",
          "1, 2, 4 or 8", std::to_string(config.num_warps), "pass 0 to let the kernel choose");
  if (!config.multi_row_reductions)
    config.multi_row_reductions = multi_row_pays(config.block_v, config.num_warps);
  return config;
}

std::string kda_verify_name(const KdaVerifyConfig& config) {
  return "kda_verify_h" + std::to_string(config.heads) + "_n" + std::to_string(config.requests) + "_q" +
         std::to_string(config.q) + (config.label.empty() ? "" : "__" + config.label);
}

std::vector<KdaVerifyConfig> kda_verify_variants(int heads, int requests, int q) {
  const KdaVerifyConfig chosen = resolve({.heads = heads, .requests = requests, .q = q});
  const std::string split =
      "bv" + std::to_string(chosen.block_v) + "_w" + std::to_string(chosen.num_warps);
  std::vector<KdaVerifyConfig> variants;
  const Split other = chosen.block_v == kWideSplit.block_v ? kNarrowSplit : kWideSplit;
  variants.push_back(
      {.heads = heads,
       .requests = requests,
       .q = q,
       .block_v = other.block_v,
       .num_warps = other.num_warps,
       .label = "bv" + std::to_string(other.block_v) + "_w" + std::to_string(other.num_warps)});
  KdaVerifyConfig reduction = chosen;
  reduction.multi_row_reductions = !*chosen.multi_row_reductions;
  reduction.label = split + (*reduction.multi_row_reductions ? "_multi_row" : "_butterfly");
  variants.push_back(reduction);
  // Many pairs: bandwidth. The copy kernel was 4% faster without the evict-first hint.
  if (int64_t{heads} * requests >= 96) {
    KdaVerifyConfig cached = chosen;
    cached.stream_state = false;
    cached.label = split + "_cached";
    variants.push_back(cached);
  }
  // Few (request, head) pairs: latency. Loading the inputs first was 5-10% slower at every shape at
  // commit 4b7fd9b; in its SASS the state loads come after the first of the per-head math (a square
  // of a loaded k), so they wait for an input to arrive, and the last one for the first norm
  // shuffle.
  if (int64_t{heads} * requests <= 192) {
    KdaVerifyConfig inputs_first = chosen;
    inputs_first.inputs_before_state = true;
    inputs_first.label = split + "_early_inputs";
    variants.push_back(inputs_first);
  }
  return variants;
}

std::array<int, 3> kda_verify_grid(const KdaVerifyConfig& config) {
  KdaVerifyConfig c = resolve(config);
  return {kHeadDim / c.block_v, c.heads, c.requests};
}

Program kda_verify_program(const KdaVerifyConfig& config, SourceLocation loc) {
  const KdaVerifyConfig c = resolve(config, loc);
  constexpr int D = kHeadDim;
  const int heads = c.heads, q = c.q;
  Builder b(kda_verify_name(c),
            {.num_warps = c.num_warps, .multi_row_reductions = *c.multi_row_reductions}, loc);
  auto qp = b.arg("q", ptr(bf16)), kp = b.arg("k", ptr(bf16)), vp = b.arg("v", ptr(bf16));
  auto gp = b.arg("g", ptr(bf16)), bp = b.arg("beta", ptr(bf16));
  auto a_log = b.arg("a_log", ptr(f32)), dt_bias = b.arg("dt_bias", ptr(f32));
  // The slot stride is promised a multiple of 4 elements, so every state row stays 16-byte aligned.
  auto state = b.arg("state", ptr(f32)), slot_stride = b.arg("slot_stride", i64, {.multiple_of = 4});
  auto slots = b.arg("state_indices", ptr(i32)), accepted = b.arg("num_accepted", ptr(i32));
  auto out = b.arg("o", ptr(bf16));

  auto vb = program_id(0), h = program_id(1), n = program_id(2);
  auto kk = arange(0, D);
  auto vv = vb * c.block_v + arange(0, c.block_v);

  // The request's slots and accepted count, then the state load as soon as they arrive, then the
  // gate parameters and the q tokens' q, k, v, g and beta (by default: inputs_before_state). A load
  // with a cache hint is an ordered access in the generated code (an asm with a memory clobber on
  // CUDA), so nothing that depends on a later load can move ahead of the state load.
  std::vector<Value> slot;
  for (int t = 0; t < q; ++t) slot.push_back(load(slots + n * q + t));
  auto n_accepted = load(accepted + n);
  Value a_log_h, bias;
  std::vector<Value> q_in, k_in, v_in, g_in, beta_in;
  auto load_inputs = [&] {
    a_log_h = load(a_log + h);
    bias = load(dt_bias + h * D + kk);
    for (int t = 0; t < q; ++t) {
      auto tok = (n * q + t) * heads + h;
      q_in.push_back(load(qp + tok * D + kk));
      k_in.push_back(load(kp + tok * D + kk));
      v_in.push_back(load(vp + tok * D + vv));
      g_in.push_back(load(gp + tok * D + kk));
      beta_in.push_back(load(bp + tok));
    }
  };
  if (c.inputs_before_state) load_inputs();
  // The read slot is picked from the already loaded column values.
  Value first = slot[0];
  for (int t = 1; t < q; ++t) first = where(n_accepted == t + 1, slot[t], first);
  auto has_state = first > 0;
  auto tile = col(h * D + vv) * D + row(kk);
  const AccessOptions state_access{.cache = c.stream_state ? Cache::streaming : Cache::normal};
  auto S = load(state + first.to(i64) * slot_stride + tile, has_state, 0.0f, state_access);
  if (!c.inputs_before_state) load_inputs();

  // Per token, while the state load is in flight: l2-normalized q (scaled) and k, the decay
  // exp(gate), beta, v's rows, and k . q.
  auto decay_scale = exp(a_log_h);
  std::vector<Value> qn, kn, decay, beta, vt, kq;
  for (int t = 0; t < q; ++t) {
    qn.push_back(l2_normalized(q_in[t].to(f32)) * (1.0f / std::sqrt(float(D))));
    kn.push_back(l2_normalized(k_in[t].to(f32)));
    decay.push_back(exp(kLowerBound * sigmoid(decay_scale * (g_in[t].to(f32) + bias))));
    beta.push_back(sigmoid(beta_in[t].to(f32)));
    vt.push_back(v_in[t].to(f32));
    kq.push_back(sum(kn.back() * qn.back()));
  }

  std::vector<Value> o_rows, e_rows;
  if (c.chunked) {
    // Every reduction over K against the initial state S0, all independent of each other: with
    // P_t = decay_0 ... decay_t and span(j, t) = decay_{j+1} ... decay_t (per key channel),
    //   S_{t-1} decayed . k_t = S0 . (P_t k_t) + sum_{j<t} e_j (k_j span(j, t) . k_t)
    //   o_t = S0 . (P_t q_t) + sum_{j<t} e_j (k_j span(j, t) . q_t) + e_t (k_t . q_t)
    // The per-head dot products need no state; only the short recurrence in e stays serial.
    std::vector<Value> cumulative = {decay[0]};
    for (int t = 1; t < q; ++t) cumulative.push_back(cumulative.back() * decay[t]);
    std::vector<Value> s0_k, s0_q;
    for (int t = 0; t < q; ++t) {
      s0_k.push_back(sum(S * row(cumulative[t] * kn[t]), 1));
      s0_q.push_back(sum(S * row(cumulative[t] * qn[t]), 1));
    }
    for (int t = 0; t < q; ++t) {
      Value kv = s0_k[t], ov = s0_q[t];
      for (int j = 0; j < t; ++j) {
        Value span = decay[j + 1];
        for (int i = j + 2; i <= t; ++i) span = span * decay[i];
        auto carried = kn[j] * span;
        kv = kv + e_rows[j] * sum(carried * kn[t]);
        ov = ov + e_rows[j] * sum(carried * qn[t]);
      }
      e_rows.push_back((vt[t] - kv) * beta[t]);
      o_rows.push_back(ov + e_rows.back() * kq[t]);
    }
  }
  for (int t = 0; t < q; ++t) {
    auto tok = (n * q + t) * heads + h;
    auto decayed = S * row(decay[t]);
    if (!c.chunked) {
      e_rows.push_back((vt[t] - sum(decayed * row(kn[t]), 1)) * beta[t]);
      o_rows.push_back(sum(decayed * row(qn[t]), 1) + e_rows.back() * kq[t]);
    }
    S = decayed + col(e_rows[t]) * row(kn[t]);
    store(out + tok * D + vv, where(has_state, o_rows[t], 0.0f).to(bf16));
    store(state + slot[t].to(i64) * slot_stride + tile, S, has_state & (slot[t] > 0), state_access);
  }
  return b.finish(loc);
}

}  // namespace monotile::kernels::kda
