// Hand-computed cases for each part of the float64 reference: AttnRes, the conv with the accepted
// offset, the delta rule, the gated norm, SiTU, the router's tie and NaN rules, MXFP4 decode of
// every nibble code under several scale codes, and bf16 rounding once.
#include "kernels/reference/k3_parts.h"

#include <cmath>

#include "gtest/gtest.h"
#include "model/dtype.h"
#include "model/mxfp4.h"

namespace monotile::kernels::reference {
namespace {

constexpr double kExact = 1e-14;

TEST(K3Parts, AttnResEqualLogitsAverage) {
  std::vector<double> block = {1, 0}, prefix = {0, 2}, ones = {1, 1};
  std::vector<std::span<const double>> sources = {block, prefix};
  std::vector<double> mixed = attn_res_row(sources, ones, ones, {}, 0.0, Rounding::kNone);
  EXPECT_NEAR(mixed[0], 0.5, kExact);
  EXPECT_NEAR(mixed[1], 1.0, kExact);
  std::vector<double> normed = attn_res_row(sources, ones, ones, ones, 0.0, Rounding::kNone);
  EXPECT_NEAR(normed[0], 0.5 / std::sqrt(0.625), kExact);
  EXPECT_NEAR(normed[1], 1.0 / std::sqrt(0.625), kExact);
}

TEST(K3Parts, AttnResSoftmaxOfScaledLogits) {
  // c = wn wq = [1, 0]: logit_block = 1 * rsqrt(1/2) = sqrt(2), logit_prefix = 0.
  std::vector<double> block = {1, 0}, prefix = {0, 1}, wn = {1, 1}, wq = {1, 0};
  std::vector<std::span<const double>> sources = {block, prefix};
  std::vector<double> mixed = attn_res_row(sources, wn, wq, {}, 0.0, Rounding::kNone);
  double w_block = 1.0 / (1.0 + std::exp(-std::sqrt(2.0)));
  EXPECT_NEAR(mixed[0], w_block, kExact);
  EXPECT_NEAR(mixed[1], 1.0 - w_block, kExact);
}

TEST(K3Parts, AttnResWithoutBlocksIsThePrefix) {
  std::vector<double> prefix = {3, -4}, ones = {1, 1};
  std::vector<std::span<const double>> sources = {prefix};
  EXPECT_EQ(attn_res_row(sources, ones, ones, {}, 1e-5, Rounding::kNone), prefix);
}

TEST(K3Parts, ConvUsesTheAcceptedOffsetAndShiftsTheState) {
  // width 4, one channel, state_len 5; num_accepted 2: the window is st[1], st[2], st[3].
  std::vector<double> state = {1, 2, 3, 4, 5}, weights = {1, 0.25, 0, 0.5}, x = {10, 20, 30};
  std::vector<double> out = causal_conv(state, 5, weights, 4, x, 3, 1, 2, Rounding::kNone);
  const double acc[] = {2 + 0.75 + 5, 3 + 1 + 10, 4 + 2.5 + 15};
  for (int t = 0; t < 3; ++t) EXPECT_NEAR(out[t], acc[t] / (1 + std::exp(-acc[t])), kExact) << t;
  EXPECT_EQ(state, (std::vector<double>{3, 4, 10, 20, 30}));
}

TEST(K3Parts, DeltaRuleTwoTokens) {
  // D = 2, zero initial state; token 0: q = k = e0, v = [2, 4], beta_raw 0 (beta 1/2); token 1:
  // k = e1, q = e0, gate_raw 0 with A_log 0: decay exp(-5 sigmoid(0)) = exp(-2.5).
  std::vector<double> q = {1, 0, 1, 0}, k = {1, 0, 0, 1}, v = {2, 4, 7, -3}, g = {0, 0, 0, 0}, beta = {0, 0}, dt = {0, 0};
  HeadStep step{q, k, v, g, beta, dt, 0.0, -5.0};
  std::vector<double> state(4, 0.0);
  std::vector<std::vector<double>> states;
  std::vector<double> o = delta_rule_head(step, state, 2, 2, Rounding::kNone,
                                          [&](int64_t, const std::vector<double>& s) { states.push_back(s); });
  const double kn = 1.0 / std::sqrt(1.0 + 1e-6), qn = kn / std::sqrt(2.0), decay = std::exp(-2.5);
  // Token 0: S = decay * 0 + (v beta) k^T; o = S q.
  EXPECT_NEAR(o[0], 1 * kn * qn, kExact);
  EXPECT_NEAR(o[1], 2 * kn * qn, kExact);
  // Token 1: column 0 decays and column 1 receives e = v beta (S k = 0 after the decay); o reads column 0.
  EXPECT_NEAR(o[2], decay * kn * qn, kExact);
  EXPECT_NEAR(o[3], 2 * decay * kn * qn, kExact);
  ASSERT_EQ(states.size(), 2u);
  EXPECT_NEAR(states[1][1], 3.5 * kn, kExact);   // S[v=0][k=1]
  EXPECT_NEAR(states[1][3], -1.5 * kn, kExact);  // S[v=1][k=1]
}

TEST(K3Parts, GatedRmsNorm) {
  std::vector<double> o = {3, 4}, gate = {0, 30}, weight = {1, 2};
  std::vector<double> y = gated_rms_norm(o, gate, weight, 0.0, Rounding::kNone);
  double rstd = 1.0 / std::sqrt(12.5);
  EXPECT_NEAR(y[0], 3 * rstd * 0.5, kExact);
  EXPECT_NEAR(y[1], 4 * rstd * 2 / (1 + std::exp(-30.0)), kExact);
}

TEST(K3Parts, SituMatchesItsTanhForm) {
  for (double g : {-7.0, -1.0, 0.0, 0.3, 2.0, 9.0}) {
    for (double u : {-40.0, -2.0, 0.0, 1.5, 60.0}) {
      double expected = 2.0 * std::tanh(g / 4) * (1 + std::tanh(g / 2)) * 25 * std::tanh(u / 25);
      EXPECT_NEAR(situ(g, u, 4.0, 25.0), expected, 1e-12 * (1 + std::fabs(expected))) << g << " " << u;
    }
  }
  EXPECT_NEAR(situ(200, 2000, 4, 25), 100.0, 1e-9);  // both tanh saturate, sigmoid 1
}

TEST(K3Parts, RouterTiesGoToTheLowerId) {
  std::vector<double> logits(6, 0.0), bias = {0, 0.1, 0.1, 0, 0.1, 0};
  RouterChoice choice = route(logits, bias, 2, true, 1.0);
  EXPECT_EQ(choice.experts, (std::vector<int>{1, 2}));
  EXPECT_NEAR(choice.weights[0], 0.5, kExact);
  choice = route(logits, std::vector<double>(6, 0.0), 4, true, 1.0);
  EXPECT_EQ(choice.experts, (std::vector<int>{0, 1, 2, 3}));
  // The bias picks, the pre-bias sigmoid weighs.
  std::vector<double> l2 = {std::log(3.0), 0.0, 0.0}, b2 = {0, 0.5, 0};
  choice = route(l2, b2, 2, true, 1.0);
  EXPECT_EQ(choice.experts, (std::vector<int>{1, 0}));
  EXPECT_NEAR(choice.weights[0], 0.5 / 1.25, kExact);
  EXPECT_NEAR(choice.weights[1], 0.75 / 1.25, kExact);
}

TEST(K3Parts, RouterNanRanksLastAndWeighsZero) {
  const double nan = std::nan("");
  std::vector<double> logits = {0.0, nan, std::log(3.0)}, bias = {0, 0, 0};
  RouterChoice choice = route(logits, bias, 3, true, 1.0);
  EXPECT_EQ(choice.experts, (std::vector<int>{2, 0, 1}));
  EXPECT_NEAR(choice.weights[0], 0.75 / 1.25, kExact);
  EXPECT_NEAR(choice.weights[1], 0.5 / 1.25, kExact);
  EXPECT_EQ(choice.weights[2], 0.0);
  // A NaN bias makes the key NaN: never chosen while others remain.
  std::vector<double> nan_bias = {nan, 0, 0};
  choice = route(std::vector<double>(3, 0.0), nan_bias, 2, true, 1.0);
  EXPECT_EQ(choice.experts, (std::vector<int>{1, 2}));
}

TEST(K3Parts, Mxfp4DecodesEveryCodeUnderSeveralScales) {
  const double table[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
  for (uint8_t scale : {uint8_t{127}, uint8_t{126}, uint8_t{130}, uint8_t{100}, uint8_t{1}, uint8_t{254}}) {
    // Row of 64: group 0 holds codes 0..15 twice (element 2b low nibble, 2b+1 high), group 1 the
    // same under the next scale code.
    std::vector<uint8_t> packed(32), scales = {scale, static_cast<uint8_t>(scale - 1)};
    for (int b = 0; b < 32; ++b) packed[b] = static_cast<uint8_t>(((2 * b) % 16) | (((2 * b + 1) % 16) << 4));
    std::vector<double> values = model::mxfp4_dequantize(packed, scales, 1, 64);
    for (int k = 0; k < 64; ++k) {
      double expected = table[k % 16] * std::ldexp(1.0, (k < 32 ? scale : scale - 1) - 127);
      EXPECT_EQ(values[k], expected) << "code " << k % 16 << " scale " << int(scale);
      EXPECT_EQ(std::signbit(values[k]), k % 16 >= 8) << k;
    }
  }
  EXPECT_TRUE(std::isnan(model::e8m0_scale_value(255)));
  for (uint8_t code = 0; code < 16; ++code) {
    if (code == 8) continue;  // -0 encodes as +0
    EXPECT_EQ(model::mxfp4_code_from_value(table[code]), code);
  }
  EXPECT_EQ(model::mxfp4_code_from_value(0.75), 2);  // tie to the even code (1.0)
  EXPECT_EQ(model::mxfp4_code_from_value(100), 7);   // saturates at 6
}

TEST(K3Parts, Bf16RoundsOnce) {
  // 1 + 2^-8 + 2^-30: through f32 it would become the tie 1 + 2^-8 and round to 1; once, it is up.
  EXPECT_EQ(model::round_to_bf16(1 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30)), 1 + std::ldexp(1.0, -7));
  EXPECT_EQ(model::round_to_bf16(1 + std::ldexp(1.0, -8)), 1.0);
  EXPECT_EQ(model::round_to_bf16(1 + 3 * std::ldexp(1.0, -9)), 1 + std::ldexp(1.0, -7));
  EXPECT_TRUE(std::isnan(model::round_to_bf16(std::nan(""))));
  EXPECT_EQ(round_bf16(1 + std::ldexp(1.0, -20), Rounding::kNone), 1 + std::ldexp(1.0, -20));
}

TEST(K3Parts, RmsNormRoundsTwiceUnderBf16) {
  std::vector<double> x = {1, 2, 3}, w = {1.5, 0.7, 1.1};
  std::vector<double> exact = rms_norm(x, w, 1e-5, Rounding::kNone);
  std::vector<double> rounded = rms_norm(x, w, 1e-5, Rounding::kBf16);
  double rstd = 1 / std::sqrt(14.0 / 3 + 1e-5);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(exact[i], x[i] * rstd * w[i], kExact);
    EXPECT_EQ(rounded[i], model::round_to_bf16(model::round_to_bf16(x[i] * rstd) * w[i]));
  }
}

}  // namespace
}  // namespace monotile::kernels::reference
