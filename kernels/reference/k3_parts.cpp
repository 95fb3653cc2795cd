// The layer's parts in float64, each a direct transcription of its section of k3_layer.md.
#include "kernels/reference/k3_parts.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "model/dtype.h"

namespace monotile::kernels::reference {

double round_bf16(double x, Rounding rounding) {
  return rounding == Rounding::kBf16 ? model::round_to_bf16(x) : x;
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double situ(double gate, double up, double beta, double linear_beta) {
  return beta * std::tanh(gate / beta) * sigmoid(gate) * (linear_beta * std::tanh(up / linear_beta));
}

std::vector<double> matvec(std::span<const double> w, std::span<const double> x, int64_t rows, int64_t cols) {
  std::vector<double> out(static_cast<size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = w.data() + r * cols;
    double sum = 0;
    for (int64_t k = 0; k < cols; ++k) sum += row[k] * x[k];
    out[r] = sum;
  }
  return out;
}

namespace {

// The mix's softmax weights over the sources (1 for a single source).
std::vector<double> mix_weights(std::span<const std::span<const double>> sources, std::span<const double> norm,
                                std::span<const double> proj, double eps) {
  const size_t h = sources.back().size();
  if (sources.size() == 1) return {1.0};
  std::vector<double> logits;
  for (std::span<const double> v : sources) {
    double dot = 0, squares = 0;
    for (size_t i = 0; i < h; ++i) {
      dot += v[i] * norm[i] * proj[i];
      squares += v[i] * v[i];
    }
    logits.push_back(dot / std::sqrt(squares / static_cast<double>(h) + eps));
  }
  double top = *std::max_element(logits.begin(), logits.end());
  std::vector<double> weights;
  double total = 0;
  for (double logit : logits) {
    weights.push_back(std::exp(logit - top));
    total += weights.back();
  }
  for (double& w : weights) w /= total;
  return weights;
}

std::vector<double> mixed_row(std::span<const std::span<const double>> sources, const std::vector<double>& weights) {
  std::vector<double> mixed(sources.back().size(), 0.0);
  for (size_t s = 0; s < sources.size(); ++s) {
    for (size_t i = 0; i < mixed.size(); ++i) mixed[i] += weights[s] * sources[s][i];
  }
  return mixed;
}

double rstd_of(const std::vector<double>& mixed, double eps) {
  double squares = 0;
  for (double m : mixed) squares += m * m;
  return 1.0 / std::sqrt(squares / static_cast<double>(mixed.size()) + eps);
}

}  // namespace

std::vector<double> attn_res_row(std::span<const std::span<const double>> sources, std::span<const double> norm,
                                 std::span<const double> proj, std::span<const double> out_norm, double eps,
                                 Rounding rounding) {
  std::vector<double> mixed = mixed_row(sources, mix_weights(sources, norm, proj, eps));
  if (!out_norm.empty()) {
    const double rstd = rstd_of(mixed, eps);
    for (size_t i = 0; i < mixed.size(); ++i) mixed[i] = mixed[i] * rstd * out_norm[i];
  }
  for (double& m : mixed) m = round_bf16(m, rounding);
  return mixed;
}

std::vector<double> attn_res_row_linear(std::span<const std::span<const double>> sources, std::span<const double> norm,
                                        std::span<const double> proj, std::span<const double> out_norm, double eps,
                                        Rounding rounding) {
  const std::vector<double> weights = mix_weights(sources, norm, proj, eps);
  const double rstd = rstd_of(mixed_row(sources, weights), eps);
  std::vector<double> x(sources.back().size(), 0.0);
  for (size_t s = 0; s < sources.size(); ++s) {
    for (size_t i = 0; i < x.size(); ++i) x[i] += weights[s] * rstd * round_bf16(out_norm[i] * sources[s][i], rounding);
  }
  return x;
}

std::vector<double> causal_conv(std::span<double> state, int64_t state_len, std::span<const double> weights,
                                int width, std::span<const double> x, int64_t tokens, int64_t channels,
                                int num_accepted, Rounding rounding) {
  const int64_t off = num_accepted - 1;
  std::vector<double> out(static_cast<size_t>(tokens * channels));
  std::vector<double> window(static_cast<size_t>(width - 1));
  std::vector<double> old(state.begin(), state.end());
  for (int64_t c = 0; c < channels; ++c) {
    for (int j = 0; j < width - 1; ++j) window[j] = old[(off + j) * channels + c];
    for (int64_t t = 0; t < tokens; ++t) {
      double acc = weights[c * width + width - 1] * x[t * channels + c];
      for (int j = 0; j < width - 1; ++j) acc += weights[c * width + j] * window[j];
      out[t * channels + c] = round_bf16(acc * sigmoid(acc), rounding);
      for (int j = 0; j + 1 < width - 1; ++j) window[j] = window[j + 1];
      window[width - 2] = x[t * channels + c];
    }
    // New columns: the window's newest width-2 inputs before this step, then every token.
    for (int j = 0; j < width - 2; ++j) state[j * channels + c] = old[(off + 1 + j) * channels + c];
    for (int64_t t = 0; t < tokens && width - 2 + t < state_len; ++t) {
      state[(width - 2 + t) * channels + c] = x[t * channels + c];
    }
  }
  return out;
}

std::vector<double> delta_rule_head(const HeadStep& step, std::vector<double>& state, int64_t tokens, int64_t dim,
                                    Rounding rounding,
                                    const std::function<void(int64_t, const std::vector<double>&)>& after_token) {
  std::vector<double> out(static_cast<size_t>(tokens * dim));
  const double q_scale = 1.0 / std::sqrt(static_cast<double>(dim));
  const double a = std::exp(step.a_log);
  std::vector<double> q(dim), k(dim), decay(dim), e(dim);
  for (int64_t t = 0; t < tokens; ++t) {
    double qq = 0, kk = 0;
    for (int64_t i = 0; i < dim; ++i) {
      qq += step.q[t * dim + i] * step.q[t * dim + i];
      kk += step.k[t * dim + i] * step.k[t * dim + i];
    }
    double q_inv = 1.0 / std::sqrt(qq + 1e-6), k_inv = 1.0 / std::sqrt(kk + 1e-6);
    for (int64_t i = 0; i < dim; ++i) {
      q[i] = step.q[t * dim + i] * q_inv * q_scale;
      k[i] = step.k[t * dim + i] * k_inv;
      double u = step.gate_raw[t * dim + i] + step.dt_bias[i];
      decay[i] = std::exp(step.lower_bound * sigmoid(a * u));
    }
    const double beta = sigmoid(step.beta_raw[t]);
    for (int64_t v = 0; v < dim; ++v) {
      double* row = state.data() + v * dim;
      double sk = 0;
      for (int64_t i = 0; i < dim; ++i) {
        row[i] *= decay[i];
        sk += row[i] * k[i];
      }
      e[v] = (step.v[t * dim + v] - sk) * beta;
    }
    for (int64_t v = 0; v < dim; ++v) {
      double* row = state.data() + v * dim;
      double o = 0;
      for (int64_t i = 0; i < dim; ++i) {
        row[i] += e[v] * k[i];
        o += row[i] * q[i];
      }
      out[t * dim + v] = round_bf16(o, rounding);
    }
    if (after_token) after_token(t, state);
  }
  return out;
}

std::vector<double> gated_rms_norm(std::span<const double> o, std::span<const double> gate, std::span<const double> weight,
                                   double eps, Rounding rounding) {
  double squares = 0;
  for (double x : o) squares += x * x;
  double rstd = 1.0 / std::sqrt(squares / static_cast<double>(o.size()) + eps);
  std::vector<double> out(o.size());
  for (size_t i = 0; i < o.size(); ++i) out[i] = round_bf16(o[i] * rstd * weight[i] * sigmoid(gate[i]), rounding);
  return out;
}

std::vector<double> rms_norm(std::span<const double> x, std::span<const double> weight, double eps, Rounding rounding) {
  double squares = 0;
  for (double v : x) squares += v * v;
  double rstd = 1.0 / std::sqrt(squares / static_cast<double>(x.size()) + eps);
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = round_bf16(round_bf16(x[i] * rstd, rounding) * weight[i], rounding);
  return out;
}

RouterChoice route(std::span<const double> logits, std::span<const double> bias, int top_k, bool renormalize,
                   double scaling) {
  const size_t n = logits.size();
  std::vector<double> score(n), key(n);
  for (size_t e = 0; e < n; ++e) {
    score[e] = sigmoid(logits[e]);
    key[e] = score[e] + bias[e];
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    bool a_nan = std::isnan(key[a]), b_nan = std::isnan(key[b]);
    if (a_nan != b_nan) return b_nan;  // a NaN key ranks last
    if (a_nan) return false;           // NaNs keep id order
    return key[a] > key[b];            // equal keys keep id order: the lower id first
  });
  RouterChoice choice;
  double total = 0;
  for (int i = 0; i < top_k && i < static_cast<int>(n); ++i) {
    int e = order[i];
    choice.experts.push_back(e);
    double s = std::isnan(score[e]) ? 0.0 : score[e];
    choice.weights.push_back(s);
    total += s;
  }
  for (double& w : choice.weights) {
    if (renormalize) w = total > 0 ? w / total : 0.0;
    w *= scaling;
  }
  return choice;
}

}  // namespace monotile::kernels::reference
