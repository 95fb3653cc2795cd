// The check of `monotile layer run`; see layer_check.h.
#include "tools/layer_check.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kernels/k3/k1_check.h"
#include "kernels/k3/k2.h"
#include "kernels/reference/k3_layer_reference.h"
#include "kernels/reference/k3_parts.h"
#include "model/dtype.h"
#include "support/status_macros.h"

namespace monotile::tools {
namespace {

using kernels::k3::check_output;
using kernels::k3::CheckRule;
using kernels::k3::OutputCheck;
using kernels::k3::rule_for;
using kernels::reference::Rounding;
using Vec = std::vector<double>;

// The router's inputs round to bf16 (y) before the logits: a logit moves by about 2^-9 of |y| |w|,
// so experts whose keys lie within this of the k-th key may swap (as K2's own tests allow).
constexpr double kRouteMargin = 2e-3;

Vec doubles(const std::vector<uint16_t>& bits) {
  Vec out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = model::bf16_to_float(bits[i]);
  return out;
}

Vec doubles(const std::vector<float>& values) {
  return Vec(values.begin(), values.end());
}

// A table row: the check and its bound in words.
struct Row {
  OutputCheck check;
  std::string bound;
};

std::string bound_of(const CheckRule& rule) {
  std::string bound = absl::StrFormat("%g ulps", rule.ulps);
  if (rule.abs_share > 0) absl::StrAppendFormat(&bound, " or %g x RMS", rule.abs_share);
  if (rule.outlier_share > 0) {
    absl::StrAppendFormat(&bound, ", %g%% outliers within %g x RMS", rule.outlier_share * 100,
                          rule.outlier_abs_share);
  }
  return bound;
}

// The conv state in the reference's layout [slots, SL, 3 Pl].
Vec conv_channels_last(const LayerStep& step, const std::vector<uint16_t>& conv, int64_t channels) {
  Vec out(conv.size());
  for (int64_t s = 0; s < step.slots; ++s) {
    for (int64_t e = 0; e < step.state_len; ++e) {
      for (int64_t c = 0; c < channels; ++c) {
        out[(s * step.state_len + e) * channels + c] =
            model::bf16_to_float(conv[step.conv_index(s, c, e, channels)]);
      }
    }
  }
  return out;
}

// K1's part: rows for its outputs (the prefix only when K1 ran last); `expected` keeps the
// reference's prefix and blocks for K2's.
absl::Status check_k1(const LayerModel& m, const LayerStep& step, const LayerShape& shape,
                      const LayerOutputs& out, const kernels::reference::RankLayerWeights& weights,
                      kernels::reference::KdaAttentionOutput& expected, std::vector<Row>& rows) {
  kernels::reference::LayerInput input;
  input.prefix = doubles(step.prefix);
  if (step.has_delta) input.delta = doubles(step.delta);
  input.blocks = doubles(step.blocks);
  input.meta = {step.requests, step.q, step.state_indices, step.num_accepted};
  const int64_t channels = shape.channels();
  input.caches.push_back({step.slots, step.state_len,
                          conv_channels_last(step, step.conv_state, channels),
                          doubles(step.recurrent_state)});
  MT_ASSIGN_OR_RETURN(expected, kernels::reference::kda_attention_reference(
                                    m.config, m.layer, weights, input, Rounding::kBf16));
  // Slots the step writes; every other slot of both caches must keep its bits.
  std::set<int64_t> written;
  for (int n = 0; n < step.requests; ++n) {
    const int32_t* row = &step.state_indices[static_cast<size_t>(n * step.q)];
    if (row[0] > 0) written.insert(row[0]);
    if (row[step.num_accepted[n] - 1] > 0) {
      for (int t = 0; t < step.q; ++t) {
        if (row[t] > 0) written.insert(row[t]);
      }
    }
  }
  const int64_t conv_slot = step.state_len * channels, state_slot = shape.heads * 128 * 128;
  std::vector<bool> conv_exact(static_cast<size_t>(step.slots * conv_slot)),
      state_exact(static_cast<size_t>(step.slots * state_slot));
  for (int64_t s = 0; s < step.slots; ++s) {
    const bool untouched = !written.contains(s);
    std::fill_n(conv_exact.begin() + s * conv_slot, conv_slot, untouched);
    std::fill_n(state_exact.begin() + s * state_slot, state_slot, untouched);
  }
  const int64_t tokens = step.tokens();
  auto add = [&](const std::string& name, const Vec& actual, const Vec& reference,
                 const std::vector<int64_t>& dims, const std::vector<bool>* exact = nullptr) {
    const CheckRule rule = rule_for(name);
    rows.push_back({check_output(name, actual, reference, dims, rule, exact), bound_of(rule)});
  };
  if (!shape.ffn) add("prefix", doubles(out.prefix), expected.prefix, {tokens, shape.hidden});
  add("blocks", doubles(out.blocks), expected.blocks, {tokens, shape.block_count, shape.hidden});
  add("x", doubles(out.x), expected.x, {tokens, shape.hidden});
  add("core", doubles(out.core), expected.core, {tokens, shape.projection});
  add("conv_state", conv_channels_last(step, out.conv_state, channels), expected.cache.conv,
      {step.slots, step.state_len, channels}, &conv_exact);
  add("recurrent_state", doubles(out.recurrent_state), expected.cache.state,
      {step.slots, shape.heads, 128, 128}, &state_exact);
  return absl::OkStatus();
}

// K2's part (k3_layer.md 2.2 steps 2-5 on this rank's weights alone, as K2 computes them on one
// rank): a = bf16(W_o core), P' = bf16(P + a) (a at a block write), y = the MLP AttnRes, the
// route, m = the latent MoE. `prefix` and `blocks` are the ones K2 read (the reference's after K1).
absl::Status check_k2(const LayerModel& m, const LayerStep& step, const LayerShape& shape,
                      const LayerOutputs& out, const kernels::reference::RankLayerWeights& w,
                      const Vec& core, const Vec& prefix, const Vec& blocks,
                      std::vector<Row>& rows) {
  const int64_t tokens = step.tokens(), h = shape.hidden, cw = shape.core_width, k = shape.top_k;
  MT_ASSIGN_OR_RETURN(kernels::k3::K2Build b,
                      kernels::k3::k2_build(m.config, m.dims, m.layer, static_cast<int>(cw),
                                            static_cast<int>(tokens)));
  const std::string moe = "block_sparse_moe.";
  std::span<const double> w_o = w.at("self_attn.o_proj.weight"),
                          bias = w.at(moe + "gate.e_score_correction_bias");
  Vec a(tokens * h), p(tokens * h), y(tokens * h), m_want, m_got;
  int matched = 0;
  OutputCheck route;
  route.name = "route";
  for (int64_t t = 0; t < tokens; ++t) {
    Vec o = kernels::reference::matvec(w_o, std::span(core).subspan(t * cw, cw), h, cw);
    for (int64_t i = 0; i < h; ++i) {
      a[t * h + i] = model::round_to_bf16(o[i]);
      p[t * h + i] =
          b.reset ? a[t * h + i] : model::round_to_bf16(prefix[t * h + i] + a[t * h + i]);
    }
    std::vector<std::span<const double>> sources;
    for (int s = 0; s < b.nblocks; ++s) {
      sources.push_back(std::span(blocks).subspan((t * shape.block_count + s) * h, h));
    }
    sources.push_back(std::span(p).subspan(t * h, h));
    Vec row = kernels::reference::attn_res_row(
        sources, w.at("mlp_res_norm.weight"), w.at("mlp_res_proj.weight"),
        w.at("post_attention_layernorm.weight"), b.eps, Rounding::kBf16);
    std::copy(row.begin(), row.end(), y.begin() + t * h);
    const kernels::reference::RouterChoice want =
        kernels::reference::route_row(m.config, w, row, Rounding::kBf16);
    // Every expert's key, sigmoid(logit) + bias with the fp32 logit, for the near-tie margin.
    Vec keys = kernels::reference::matvec(w.at(moe + "gate.weight"), row, b.experts, h);
    for (int x = 0; x < b.experts; ++x)
      keys[x] = kernels::reference::sigmoid(static_cast<float>(keys[x])) + bias[x];
    std::span<const int32_t> experts(out.route_experts.data() + t * k, static_cast<size_t>(k));
    std::span<const float> weights(out.route_weights.data() + t * k, static_cast<size_t>(k));
    ++route.compared;
    const bool same =
        std::equal(experts.begin(), experts.end(), want.experts.begin(), want.experts.end());
    if (!same) ++route.differing;
    const std::string why =
        kernels::k3::check_route(want.experts, want.weights, keys, experts, weights, kRouteMargin);
    if (!why.empty()) {
      if (route.failures++ == 0) route.first_failure = absl::StrCat("route of row ", t, ": ", why);
    }
    // m only where the route is the reference's: a swapped near-tie sums other experts, which the
    // route's check judges.
    if (!same) continue;
    ++matched;
    Vec mt = kernels::reference::moe_reference(m.config, std::span(&w, 1), row, Rounding::kBf16);
    m_want.insert(m_want.end(), mt.begin(), mt.end());
    for (int64_t i = 0; i < h; ++i) m_got.push_back(model::bf16_to_float(out.out[t * h + i]));
  }
  auto add = [&](const std::string& name, const std::string& rule_name, const Vec& actual,
                 const Vec& reference, int64_t row_count) {
    const CheckRule rule = rule_for(rule_name);
    rows.push_back({check_output(name, actual, reference, {row_count, h}, rule), bound_of(rule)});
  };
  add("a", "a", doubles(out.a), a, tokens);
  add("prefix", "prefix'", doubles(out.prefix), p, tokens);
  add("y", "y", doubles(out.y), y, tokens);
  rows.push_back({route, absl::StrFormat("experts within %g of the k-th key, weights within 1e-3",
                                         kRouteMargin)});
  add("out", "out", m_got, m_want, matched);
  if (matched * 2 < tokens) {
    OutputCheck& last = rows.back().check;
    ++last.failures;
    last.first_failure = absl::StrCat("only ", matched, " of ", tokens,
                                      " rows route exactly as the reference, expected "
                                      "most (near-ties are rare)");
  }
  rows.back().bound += absl::StrCat(" (", matched, " of ", tokens, " rows: the exactly routed)");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> check_layer(const LayerModel& m, const LayerStep& step,
                                 const LayerShape& shape, const LayerOutputs& out) {
  MT_ASSIGN_OR_RETURN(kernels::reference::RankLayerWeights weights, load_reference_weights(m));
  std::vector<Row> rows;
  kernels::reference::KdaAttentionOutput k1;
  if (shape.attention) MT_RETURN_IF_ERROR(check_k1(m, step, shape, out, weights, k1, rows));
  if (shape.ffn) {
    // K2 read K1's core (judged above) or the step's; the prefix and blocks K1 left, which match
    // the reference's bit for bit when K1 passes.
    const Vec core = doubles(shape.attention ? out.core : step.core);
    const Vec prefix = shape.attention ? k1.prefix : doubles(step.prefix);
    const Vec blocks = shape.attention ? k1.blocks : doubles(step.blocks);
    MT_RETURN_IF_ERROR(check_k2(m, step, shape, out, weights, core, prefix, blocks, rows));
  }
  std::printf(
      "check against the float64 reference (bf16 rounding points; ulps of bf16 at the reference's "
      "magnitude):\n");
  std::printf("  %-16s %10s %10s %9s %11s %10s %9s  %s\n", "output", "values", "bit-exact",
              "differ", "worst ulps", "worst/RMS", "outliers", "verdict");
  bool all = true;
  for (const Row& row : rows) {
    const OutputCheck& c = row.check;
    std::printf("  %-16s %10lld %10lld %9lld %11.2f %10.2e %9lld  %s (%s)\n", c.name.c_str(),
                static_cast<long long>(c.compared), static_cast<long long>(c.exact_compared),
                static_cast<long long>(c.differing), c.worst_ulps, c.worst_rms,
                static_cast<long long>(c.outliers), c.passed() ? "pass" : "FAIL",
                row.bound.c_str());
    all = all && c.passed();
  }
  for (const Row& row : rows) {
    const OutputCheck& c = row.check;
    if (!c.passed()) {
      std::printf("  %s: %lld failures; first: %s\n", c.name.c_str(),
                  static_cast<long long>(c.failures), c.first_failure.c_str());
    }
  }
  std::printf("%s\n", all ? "every output passes" : "some outputs FAIL");
  return all;
}

}  // namespace monotile::tools
