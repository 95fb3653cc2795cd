// The float64 KDA verify reference: a direct transcription of the spec's per-token steps, kept
// free of the kernel's reorderings (o_t = S' q + e (k . q), the selected read slot).
#include "kernels/kda/kda_reference.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace monotile::kernels::kda {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// x / sqrt(sum(x^2) + eps) over one head's D values.
std::vector<double> l2_normalized(const double* x, int d, double eps) {
  double ss = 0;
  for (int i = 0; i < d; ++i) ss += x[i] * x[i];
  double inv = 1.0 / std::sqrt(ss + eps);
  std::vector<double> out(d);
  for (int i = 0; i < d; ++i) out[i] = x[i] * inv;
  return out;
}

}  // namespace

absl::StatusOr<KdaStepResult> kda_verify_reference(const KdaStepValues& in, double lower_bound, double l2_eps) {
  const int H = in.heads, N = in.requests, Q = in.q, D = in.head_dim;
  const size_t tokens = size_t(N) * Q;
  const size_t act = tokens * H * D;
  if (in.q_in.size() != act || in.k_in.size() != act || in.v_in.size() != act || in.g_in.size() != act ||
      in.beta_raw.size() != tokens * H || in.a_log.size() != size_t(H) || in.dt_bias.size() != size_t(H) * D ||
      in.state_indices.size() != tokens || in.num_accepted.size() != size_t(N)) {
    return absl::InvalidArgumentError(absl::StrCat("kda reference: input sizes do not match H = ", H, ", N = ", N,
                                                   ", q = ", Q, ", D = ", D));
  }
  if (in.slot_stride < int64_t{H} * D * D || in.state.size() % in.slot_stride != 0) {
    return absl::InvalidArgumentError(absl::StrCat("kda reference: slot stride ", in.slot_stride,
                                                   " below H D D = ", int64_t{H} * D * D,
                                                   " or not dividing the state's ", in.state.size(), " values"));
  }
  const int64_t slots = static_cast<int64_t>(in.state.size()) / in.slot_stride;
  KdaStepResult result{std::vector<double>(act, 0.0), in.state};
  const double scale = 1.0 / std::sqrt(double(D));
  std::vector<double> s(size_t(D) * D);
  for (int n = 0; n < N; ++n) {
    const int accepted = in.num_accepted[n];
    if (accepted < 1 || accepted > Q) {
      return absl::InvalidArgumentError(
          absl::StrCat("kda reference: num_accepted[", n, "] = ", accepted, ", expected 1..", Q));
    }
    for (int t = 0; t < Q; ++t) {
      if (in.state_indices[size_t(n) * Q + t] >= slots) {
        return absl::InvalidArgumentError(absl::StrCat("kda reference: state_indices[", n, ", ", t, "] = ",
                                                       in.state_indices[size_t(n) * Q + t], " past the ", slots,
                                                       " slots"));
      }
    }
    const int32_t first = in.state_indices[size_t(n) * Q + accepted - 1];
    if (first <= 0) continue;  // no state: zero output, nothing read or stored
    for (int h = 0; h < H; ++h) {
      const double* init = in.state.data() + first * in.slot_stride + int64_t{h} * D * D;
      s.assign(init, init + size_t(D) * D);
      for (int t = 0; t < Q; ++t) {
        const size_t row = (size_t(n) * Q + t) * H + h;
        std::vector<double> qn = l2_normalized(in.q_in.data() + row * D, D, l2_eps);
        std::vector<double> kn = l2_normalized(in.k_in.data() + row * D, D, l2_eps);
        const double beta = sigmoid(in.beta_raw[row]);
        const double a = std::exp(in.a_log[h]);
        std::vector<double> decay(D);
        for (int k = 0; k < D; ++k) {
          decay[k] = std::exp(lower_bound * sigmoid(a * (in.g_in[row * D + k] + in.dt_bias[size_t(h) * D + k])));
        }
        for (int v = 0; v < D; ++v) {
          double* sv = s.data() + size_t(v) * D;
          for (int k = 0; k < D; ++k) sv[k] *= decay[k];
          double sk = 0;
          for (int k = 0; k < D; ++k) sk += sv[k] * kn[k];
          const double e = (in.v_in[row * D + v] - sk) * beta;
          double o = 0;
          for (int k = 0; k < D; ++k) {
            sv[k] += e * kn[k];
            o += sv[k] * qn[k] * scale;
          }
          result.o[row * D + v] = o;
        }
        const int32_t slot = in.state_indices[size_t(n) * Q + t];
        if (slot > 0) {
          std::copy(s.begin(), s.end(), result.state.begin() + slot * in.slot_stride + int64_t{h} * D * D);
        }
      }
    }
  }
  return result;
}

}  // namespace monotile::kernels::kda
