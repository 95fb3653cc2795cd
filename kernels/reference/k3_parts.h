// Float64 reference of the parts of a Kimi-K3 decoder layer, written from k3_layer.md (sections
// given per function) and k3_checkpoint.md, never from a kernel. Every function computes in double;
// `round` (bf16 rounding at the points the stock path rounds, k3_layer.md 4.7) is applied only
// where a function says so and only when Rounding::kBf16 is asked for.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace monotile::kernels::reference {

enum class Rounding { kNone, kBf16 };

// bf16r(x) under kBf16, x under kNone.
double round_bf16(double x, Rounding rounding);

double sigmoid(double x);

// SiTU(g, u) = [beta tanh(g / beta) sigmoid(g)] [lambda tanh(u / lambda)] (5.3).
double situ(double gate, double up, double beta, double linear_beta);

// out[r] = sum_k w[r, k] x[k] for a row-major [rows, cols] matrix.
std::vector<double> matvec(std::span<const double> w, std::span<const double> x, int64_t rows, int64_t cols);

// AttnRes of one row (3): sources are the blocks then the prefix (last). Returns the mixed row
// after the output norm when `out_norm` is given (else the mixed row), rounded once.
std::vector<double> attn_res_row(std::span<const std::span<const double>> sources, std::span<const double> norm,
                                 std::span<const double> proj, std::span<const double> out_norm, double eps,
                                 Rounding rounding);

// The same row as K1's linear in_proj takes it (docs/k1_linear.md): sum_s a_s bf16r(out_norm * v_s),
// a_s the softmax weight of source s times the mixed row's rstd, with out_norm * v_s rounded under
// kBf16 and the sum never rounded (the in_proj GEMV consumes it in fp32). `out_norm` is required.
std::vector<double> attn_res_row_linear(std::span<const std::span<const double>> sources, std::span<const double> norm,
                                        std::span<const double> proj, std::span<const double> out_norm, double eps,
                                        Rounding rounding);

// The short causal conv of one request on `channels` packed channels (4.2). `state` is the slot's
// [state_len, channels] (oldest column first), `weights` [channels, width] (tap width-1 multiplies
// the newest token), `x` [L, channels]. Outputs [L, channels] silu'd (rounded), and rewrites
// columns 0 .. width-2+L-1 of the state with [st[off+1 .. off+width-2], x_0 .. x_{L-1}].
std::vector<double> causal_conv(std::span<double> state, int64_t state_len, std::span<const double> weights,
                                int width, std::span<const double> x, int64_t tokens, int64_t channels,
                                int num_accepted, Rounding rounding);

// One head's delta rule over L tokens (4.3-4.4), state V-first [D][D]: per token, S *= decay (per
// column k), e = (v - S k) beta, S += e k^T, o = S q (rounded). q, k are l2-normalized here (eps
// 1e-6) and q scaled by D^-0.5. `after_token(t, S)` receives the state after token t.
struct HeadStep {
  std::span<const double> q, k, v;  // [L, D]
  std::span<const double> gate_raw;  // [L, D]: the f_b output g_raw
  std::span<const double> beta_raw;  // [L]
  std::span<const double> dt_bias;   // [D]
  double a_log = 0;
  double lower_bound = -5.0;
};
std::vector<double> delta_rule_head(const HeadStep& step, std::vector<double>& state, int64_t tokens, int64_t dim,
                                    Rounding rounding,
                                    const std::function<void(int64_t, const std::vector<double>&)>& after_token);

// Gated RMSNorm of one head (4.5): o rsqrt(mean(o^2) + eps) w sigmoid(g), rounded once.
std::vector<double> gated_rms_norm(std::span<const double> o, std::span<const double> gate, std::span<const double> weight,
                                   double eps, Rounding rounding);

// x rsqrt(mean(x^2) + eps) w: under kBf16 rounded twice, bf16r(bf16r(x rstd) w), as vLLM's RMSNorm
// kernel does (5.4 step 2).
std::vector<double> rms_norm(std::span<const double> x, std::span<const double> weight, double eps, Rounding rounding);

// The router's choice (5.1): keys s_e + bias_e with s = sigmoid(logit); the top k by key, ties to
// the lower expert id, a NaN key last; weights s / sum(s) over the chosen, a NaN score counting 0.
struct RouterChoice {
  std::vector<int> experts;  // in descending key order
  std::vector<double> weights;
};
RouterChoice route(std::span<const double> logits, std::span<const double> bias, int top_k, bool renormalize,
                   double scaling);

}  // namespace monotile::kernels::reference
