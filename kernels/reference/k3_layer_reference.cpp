// One decoder layer over all TP ranks, in float64: the stock step list of k3_layer.md 2.2 in the
// deferred-delta form of 2.3, each TP reduction a sum over the ranks' partials.
#include "kernels/reference/k3_layer_reference.h"

#include <cmath>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/dtype.h"
#include "model/mxfp4.h"
#include "support/check.h"
#include "support/status_macros.h"

namespace monotile::kernels::reference {
namespace {

using Vec = std::vector<double>;

// Row t of a [T, width] buffer.
std::span<const double> row(const Vec& all, int64_t t, int64_t width) {
  return std::span<const double>(all).subspan(static_cast<size_t>(t * width), static_cast<size_t>(width));
}

// KDA o_norm's eps: FusedRMSNormGated's default, not rms_norm_eps (k3_checkpoint.md 5.6).
constexpr double kGatedNormEps = 1e-5;

// One rank's KDA core (4.1-4.5): o_proj's input [T, Pl]; the rank's caches are read from `in` and
// written to `out`.
absl::StatusOr<Vec> kda_core(const model::ModelConfig& c, const RankLayerWeights& w, const Vec& x, int64_t tokens,
                             const StepMeta& meta, const KdaCache& in, KdaCache& out, Rounding rounding) {
  const int64_t h = c.hidden_size, d = c.kda_head_dim, nhl = w.dims.kda_heads, pl = w.dims.kda_projection;
  const int64_t rows = w.dims.in_proj_rows, channels = 3 * pl;
  const int width = c.conv_size;
  const int q = meta.q;
  if (static_cast<int64_t>(meta.requests) * q != tokens ||
      meta.state_indices.size() != static_cast<size_t>(tokens) || meta.num_accepted.size() != static_cast<size_t>(meta.requests)) {
    return absl::InvalidArgumentError(absl::StrCat("k3 reference: step metadata for ", meta.requests, " requests of ", q,
                                                   " tokens does not match ", tokens, " rows"));
  }
  if (in.conv.size() != static_cast<size_t>(in.slots * in.state_len * channels) ||
      in.state.size() != static_cast<size_t>(in.slots * nhl * d * d) || in.state_len < q + width - 2) {
    return absl::InvalidArgumentError(absl::StrCat("k3 reference: caches of ", in.slots, " slots, state_len ", in.state_len,
                                                   " do not match ", channels, " conv channels, ", nhl,
                                                   " heads, or the q + width - 2 = ", q + width - 2, " columns needed"));
  }
  for (int n = 0; n < meta.requests; ++n) {
    if (meta.num_accepted[n] < 1 || meta.num_accepted[n] > q) {
      return absl::InvalidArgumentError(absl::StrCat("k3 reference: num_accepted[", n, "] = ", meta.num_accepted[n],
                                                     ", expected 1..", q));
    }
    for (int t = 0; t < q; ++t) {
      if (meta.state_indices[n * q + t] >= in.slots) {
        return absl::InvalidArgumentError(absl::StrCat("k3 reference: state_indices[", n, ", ", t, "] = ",
                                                       meta.state_indices[n * q + t], " past the ", in.slots, " slots"));
      }
    }
  }
  // 4.1: projections, rounded to bf16.
  std::span<const double> w_in = w.at("self_attn.in_proj_qkvgfab.weight");
  std::span<const double> w_fb = w.at("self_attn.f_b_proj.weight");
  Vec proj(static_cast<size_t>(tokens * rows)), g_raw(static_cast<size_t>(tokens * pl));
  for (int64_t t = 0; t < tokens; ++t) {
    Vec p = matvec(w_in, row(x, t, h), rows, h);
    for (int64_t i = 0; i < rows; ++i) proj[t * rows + i] = round_bf16(p[i], rounding);
    Vec g = matvec(w_fb, std::span<const double>(proj).subspan(t * rows + 4 * pl, d), pl, d);
    for (int64_t i = 0; i < pl; ++i) g_raw[t * pl + i] = round_bf16(g[i], rounding);
  }
  // 4.2: the conv on [q | k | v], slot = column 0; a slot <= 0 has zero outputs and no state.
  Vec conv_out(static_cast<size_t>(tokens * channels), 0.0);
  std::span<const double> conv_w = w.at("self_attn.conv1d.weight");
  for (int n = 0; n < meta.requests; ++n) {
    int32_t slot = meta.state_indices[n * q];
    if (slot <= 0) continue;
    Vec xs(static_cast<size_t>(q * channels));
    for (int t = 0; t < q; ++t) {
      for (int64_t ch = 0; ch < channels; ++ch) xs[t * channels + ch] = proj[(n * q + t) * rows + ch];
    }
    std::vector<double> state(in.conv.begin() + slot * in.state_len * channels,
                              in.conv.begin() + (slot + 1) * in.state_len * channels);
    Vec o = causal_conv(state, in.state_len, conv_w, width, xs, q, channels, meta.num_accepted[n], rounding);
    std::copy(state.begin(), state.end(), out.conv.begin() + slot * in.state_len * channels);
    std::copy(o.begin(), o.end(), conv_out.begin() + n * q * channels);
  }
  // 4.3-4.4: the recurrence per head, read slot = column num_accepted - 1; every read is from the
  // caches before the step, every write into `out`.
  Vec core(static_cast<size_t>(tokens * pl), 0.0);
  std::span<const double> dt_bias = w.at("self_attn.dt_bias"), a_log = w.at("self_attn.A_log");
  std::span<const double> o_norm = w.at("self_attn.o_norm.weight");
  for (int n = 0; n < meta.requests; ++n) {
    int32_t init = meta.state_indices[n * q + meta.num_accepted[n] - 1];
    if (init <= 0) continue;
    for (int64_t head = 0; head < nhl; ++head) {
      Vec qh(q * d), kh(q * d), vh(q * d), gh(q * d), bh(q);
      for (int t = 0; t < q; ++t) {
        int64_t r = n * q + t;
        for (int64_t i = 0; i < d; ++i) {
          qh[t * d + i] = conv_out[r * channels + head * d + i];
          kh[t * d + i] = conv_out[r * channels + pl + head * d + i];
          vh[t * d + i] = conv_out[r * channels + 2 * pl + head * d + i];
          gh[t * d + i] = g_raw[r * pl + head * d + i];
        }
        bh[t] = proj[r * rows + 4 * pl + d + head];
      }
      HeadStep step{qh, kh, vh, gh, bh, dt_bias.subspan(head * d, d), a_log[head], c.gate_lower_bound};
      const int64_t head_size = d * d, slot_size = nhl * d * d;
      Vec s(in.state.begin() + init * slot_size + head * head_size, in.state.begin() + init * slot_size + (head + 1) * head_size);
      Vec o = delta_rule_head(step, s, q, d, rounding, [&](int64_t t, const Vec& after) {
        int32_t target = meta.state_indices[n * q + t];
        if (target > 0) std::copy(after.begin(), after.end(), out.state.begin() + target * slot_size + head * head_size);
      });
      // 4.5: gated RMSNorm with g2.
      for (int t = 0; t < q; ++t) {
        int64_t r = n * q + t;
        Vec y = gated_rms_norm(std::span<const double>(o).subspan(t * d, d),
                               std::span<const double>(proj).subspan(r * rows + 3 * pl + head * d, d), o_norm,
                               kGatedNormEps, rounding);
        std::copy(y.begin(), y.end(), core.begin() + r * pl + head * d);
      }
    }
  }
  return core;
}

// One rank's KDA partial (4.6): o_proj on the rank's columns of the core, rounded: the partial the
// all-reduce sums, [T, H].
absl::StatusOr<Vec> kda_partial(const model::ModelConfig& c, const RankLayerWeights& w, const Vec& x, int64_t tokens,
                                const StepMeta& meta, const KdaCache& in, KdaCache& out, Rounding rounding) {
  const int64_t h = c.hidden_size, pl = w.dims.kda_projection;
  MT_ASSIGN_OR_RETURN(Vec core, kda_core(c, w, x, tokens, meta, in, out, rounding));
  std::span<const double> w_o = w.at("self_attn.o_proj.weight");
  Vec partial(static_cast<size_t>(tokens * h));
  for (int64_t t = 0; t < tokens; ++t) {
    Vec o = matvec(w_o, row(core, t, pl), h, pl);
    for (int64_t i = 0; i < h; ++i) partial[t * h + i] = round_bf16(o[i], rounding);
  }
  return partial;
}

// A rank's gated SiTU MLP (5.5, 5.7): bf16r(bf16r(SiTU(bf16r(y Wgu^T))) Wd^T), not reduced.
Vec gated_mlp_partial(const model::ModelConfig& c, const RankLayerWeights& w, const std::string& prefix,
                      std::span<const double> y, int64_t local, Rounding rounding) {
  const int64_t h = c.hidden_size;
  Vec gu = matvec(w.at(prefix + "gate_up_proj.weight"), y, 2 * local, h);
  Vec a(static_cast<size_t>(local));
  for (int64_t i = 0; i < local; ++i) {
    a[i] = round_bf16(situ(round_bf16(gu[i], rounding), round_bf16(gu[local + i], rounding), c.situ_beta,
                           c.situ_linear_beta),
                      rounding);
  }
  Vec out = matvec(w.at(prefix + "down_proj.weight"), a, h, local);
  for (double& v : out) v = round_bf16(v, rounding);
  return out;
}

// AttnRes of every row (3): sources are blocks 0..count-1 of each row, then the prefix row.
Vec attn_res_rows(const model::ModelConfig& c, const RankLayerWeights& w, const Vec& prefix, const Vec& blocks,
                  int64_t tokens, int64_t count, const std::string& norm, const std::string& proj,
                  const std::string& out_norm, Rounding rounding, bool linear = false) {
  const int64_t h = c.hidden_size, block_count = c.block_count();
  Vec result(static_cast<size_t>(tokens * h));
  for (int64_t t = 0; t < tokens; ++t) {
    std::vector<std::span<const double>> sources;
    for (int64_t b = 0; b < count; ++b) sources.push_back(row(blocks, t * block_count + b, h));
    sources.push_back(row(prefix, t, h));
    Vec mixed = linear ? attn_res_row_linear(sources, w.at(norm), w.at(proj), w.at(out_norm), c.rms_norm_eps, rounding)
                       : attn_res_row(sources, w.at(norm), w.at(proj), w.at(out_norm), c.rms_norm_eps, rounding);
    std::copy(mixed.begin(), mixed.end(), result.begin() + t * h);
  }
  return result;
}

// Step 1 of a layer (2.3, 3): the delta folded into `prefix` (one rounding), at a block-write
// layer the prefix stored to block L / 12 of `blocks`, then the attention AttnRes: x.
Vec attention_res(const model::ModelConfig& c, int layer, const RankLayerWeights& w, const Vec& delta, Vec& prefix,
                  Vec& blocks, int64_t tokens, Rounding rounding, bool linear = false) {
  const int64_t h = c.hidden_size, block_count = c.block_count();
  if (!delta.empty()) {
    for (size_t i = 0; i < prefix.size(); ++i) prefix[i] = round_bf16(prefix[i] + delta[i], rounding);
  }
  if (c.is_block_write_layer(layer)) {
    const int64_t j = layer / c.attn_res_block_size;
    for (int64_t t = 0; t < tokens; ++t) {
      std::copy(prefix.begin() + t * h, prefix.begin() + (t + 1) * h, blocks.begin() + (t * block_count + j) * h);
    }
  }
  return attn_res_rows(c, w, prefix, blocks, tokens, c.previous_blocks(layer), "self_attention_res_norm.weight",
                       "self_attention_res_proj.weight", "input_layernorm.weight", rounding, linear);
}

// One expert's dequantized weights on one rank: w13 [2 Ir, lat] (gate rows then up rows), w2 [lat, Ir].
struct Expert {
  Vec w13, w2;
};

Expert dequantize_expert(const model::ModelConfig& c, const RankLayerWeights& w, int e) {
  const int64_t lat = c.routed_expert_hidden_size, ir = w.dims.expert_intermediate, group = c.mxfp4_group_size;
  const std::string moe = "block_sparse_moe.experts.";
  std::span<const uint8_t> w13 = w.raw(moe + "w13_weight"), w13_scale = w.raw(moe + "w13_weight_scale");
  std::span<const uint8_t> w2 = w.raw(moe + "w2_weight"), w2_scale = w.raw(moe + "w2_weight_scale");
  Expert expert;
  expert.w13 = model::mxfp4_dequantize(w13.subspan(e * 2 * ir * lat / 2, 2 * ir * lat / 2),
                                       w13_scale.subspan(e * 2 * ir * lat / group, 2 * ir * lat / group), 2 * ir, lat,
                                       group);
  expert.w2 = model::mxfp4_dequantize(w2.subspan(e * lat * ir / 2, lat * ir / 2),
                                      w2_scale.subspan(e * lat * ir / group, lat * ir / group), lat, ir, group);
  return expert;
}

// The latent MoE over all ranks for one row (5.1-5.6).
Vec moe_row(const model::ModelConfig& c, std::span<const RankLayerWeights> ranks, std::span<const double> y,
            std::vector<std::map<int, Expert>>& experts, Rounding rounding) {
  const int64_t h = c.hidden_size, lat = c.routed_expert_hidden_size;
  const int tp = static_cast<int>(ranks.size());
  const std::string moe = "block_sparse_moe.";
  RouterChoice choice = route_row(c, ranks[0], y, rounding);
  // 5.2: the latent, replicated.
  Vec latent_in = matvec(ranks[0].at(moe + "routed_expert_down_proj.weight"), y, lat, h);
  for (double& v : latent_in) v = round_bf16(v, rounding);
  Vec latent(static_cast<size_t>(lat), 0.0);
  std::vector<Vec> shared(tp);
  for (int r = 0; r < tp; ++r) {
    const RankLayerWeights& w = ranks[r];
    const int64_t ir = w.dims.expert_intermediate;
    // 5.3: this rank's slice of every chosen expert, weighted.
    Vec routed(static_cast<size_t>(lat), 0.0);
    for (size_t i = 0; i < choice.experts.size(); ++i) {
      int e = choice.experts[i];
      auto it = experts[r].find(e);
      if (it == experts[r].end()) it = experts[r].emplace(e, dequantize_expert(c, w, e)).first;
      Vec gu = matvec(it->second.w13, latent_in, 2 * ir, lat);
      Vec act(static_cast<size_t>(ir));
      for (int64_t k = 0; k < ir; ++k) act[k] = situ(gu[k], gu[ir + k], c.situ_beta, c.situ_linear_beta);
      Vec out = matvec(it->second.w2, act, lat, ir);
      for (int64_t k = 0; k < lat; ++k) routed[k] += choice.weights[i] * out[k];
    }
    for (int64_t k = 0; k < lat; ++k) latent[k] += round_bf16(routed[k], rounding);
    shared[r] = gated_mlp_partial(c, w, moe + "shared_experts.", y, w.dims.shared_intermediate, rounding);
  }
  // 5.4: all-reduce the latent, normalize, then each rank adds its up-projection columns into its
  // shared partial (one rounding, the GEMM's C input), and the shared partials are all-reduced.
  for (double& v : latent) v = round_bf16(v, rounding);
  Vec normed = rms_norm(latent, ranks[0].at(moe + "routed_expert_norm.weight"), c.rms_norm_eps, rounding);
  Vec m(static_cast<size_t>(h), 0.0);
  for (int r = 0; r < tp; ++r) {
    const RankLayerWeights& w = ranks[r];
    const int64_t up_rows = w.dims.up_proj_rows, first = up_rows == h ? 0 : w.dims.rank * up_rows;
    Vec up = matvec(w.at(moe + "routed_expert_up_proj.weight"), normed, up_rows, lat);
    for (int64_t i = 0; i < up_rows; ++i) shared[r][first + i] = round_bf16(shared[r][first + i] + up[i], rounding);
    for (int64_t i = 0; i < h; ++i) m[i] += shared[r][i];
  }
  for (double& v : m) v = round_bf16(v, rounding);
  return m;
}

}  // namespace

std::vector<double> moe_reference(const model::ModelConfig& config, std::span<const RankLayerWeights> ranks,
                                  std::span<const double> y, Rounding rounding) {
  std::vector<std::map<int, Expert>> experts(ranks.size());
  return moe_row(config, ranks, y, experts, rounding);
}

std::vector<double> dense_mlp_reference(const model::ModelConfig& config, std::span<const RankLayerWeights> ranks,
                                        std::span<const double> y, Rounding rounding) {
  Vec m(static_cast<size_t>(config.hidden_size), 0.0);
  for (const RankLayerWeights& w : ranks) {
    Vec partial = gated_mlp_partial(config, w, "mlp.", y, w.dims.dense_intermediate, rounding);
    for (size_t i = 0; i < m.size(); ++i) m[i] += partial[i];
  }
  for (double& v : m) v = round_bf16(v, rounding);
  return m;
}

std::span<const double> RankLayerWeights::at(const std::string& name) const {
  auto it = values.find(name);
  MT_CHECK(it != values.end(), "the rank has no such value tensor");
  return it->second;
}

std::span<const uint8_t> RankLayerWeights::raw(const std::string& name) const {
  auto it = bytes.find(name);
  MT_CHECK(it != bytes.end(), "the rank has no such byte tensor");
  return it->second;
}

void add_rank_tensor(RankLayerWeights& weights, const model::RankTensor& tensor, std::vector<uint8_t> bytes) {
  if (tensor.dtype == model::Dtype::kU8) {
    weights.bytes[tensor.name] = std::move(bytes);
    return;
  }
  Vec values(static_cast<size_t>(tensor.elements()));
  for (size_t i = 0; i < values.size(); ++i) {
    if (tensor.dtype == model::Dtype::kBF16) {
      uint16_t bits;
      std::memcpy(&bits, bytes.data() + 2 * i, 2);
      values[i] = model::bf16_to_float(bits);
    } else {
      float value;
      std::memcpy(&value, bytes.data() + 4 * i, 4);
      values[i] = value;
    }
  }
  weights.values[tensor.name] = std::move(values);
}

absl::StatusOr<RankLayerWeights> load_rank_layer(const model::LayerPlan& layer, const model::RankDims& dims,
                                                 const model::TensorSource& source) {
  RankLayerWeights weights;
  weights.dims = dims;
  for (const model::RankTensor& tensor : layer.tensors) {
    MT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, model::load_rank_tensor(tensor, source));
    add_rank_tensor(weights, tensor, std::move(bytes));
  }
  return weights;
}

RouterChoice route_row(const model::ModelConfig& c, const RankLayerWeights& rank0, std::span<const double> y,
                       Rounding rounding) {
  const std::string moe = "block_sparse_moe.";
  Vec logits = matvec(rank0.at(moe + "gate.weight"), y, c.num_experts, c.hidden_size);
  // The gate's output is fp32 (GateLinear(out_dtype=float32)).
  if (rounding == Rounding::kBf16) {
    for (double& v : logits) v = static_cast<float>(v);
  }
  return route(logits, rank0.at(moe + "gate.e_score_correction_bias"), c.num_experts_per_token, c.moe_renormalize,
               c.routed_scaling_factor);
}

absl::StatusOr<KdaAttentionOutput> kda_attention_reference(const model::ModelConfig& c, int layer,
                                                           const RankLayerWeights& rank, const LayerInput& input,
                                                           Rounding rounding, InProjInput in_proj_input) {
  const int64_t h = c.hidden_size, blocks = c.block_count();
  const int64_t tokens = static_cast<int64_t>(input.prefix.size()) / h;
  if (!c.is_kda_layer(layer)) {
    return absl::InvalidArgumentError(absl::StrCat("k3 reference layer ", layer, " is not a KDA layer"));
  }
  if (input.prefix.size() != static_cast<size_t>(tokens * h) || input.blocks.size() != static_cast<size_t>(tokens * blocks * h) ||
      (!input.delta.empty() && input.delta.size() != input.prefix.size()) || input.caches.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("k3 reference layer ", layer, ": prefix, delta and blocks must be [T, ", h,
                                                   "], [T, ", h, "] and [T, ", blocks, ", ", h, "], with one rank's caches"));
  }
  KdaAttentionOutput out;
  out.prefix = input.prefix;
  out.blocks = input.blocks;
  out.x = attention_res(c, layer, rank, input.delta, out.prefix, out.blocks, tokens, rounding,
                        in_proj_input == InProjInput::kLinearSources);
  out.cache = input.caches[0];
  MT_ASSIGN_OR_RETURN(out.core, kda_core(c, rank, out.x, tokens, input.meta, input.caches[0], out.cache, rounding));
  return out;
}

namespace {

// layer_reference's body: each reduction sums the partials of `ranks` (bf16 values), then hands
// the sum to `reduce` (nothing: it is the whole sum) before its one rounding.
absl::StatusOr<LayerOutput> layer_with(const model::ModelConfig& c, int layer, std::span<const RankLayerWeights> ranks,
                                       const LayerInput& input, Rounding rounding, const PartialSum* reduce,
                                       InProjInput in_proj_input = InProjInput::kRoundedX) {
  const int64_t h = c.hidden_size, blocks = c.block_count();
  const int64_t tokens = static_cast<int64_t>(input.prefix.size()) / h;
  const int tp = static_cast<int>(ranks.size());
  if (tp < 1 || input.prefix.size() != static_cast<size_t>(tokens * h) ||
      input.blocks.size() != static_cast<size_t>(tokens * blocks * h) ||
      (!input.delta.empty() && input.delta.size() != input.prefix.size())) {
    return absl::InvalidArgumentError(absl::StrCat("k3 reference layer ", layer, ": prefix, delta and blocks must be [T, ", h,
                                                   "], [T, ", h, "] and [T, ", blocks, ", ", h, "]"));
  }
  const bool write = c.is_block_write_layer(layer);
  const int64_t nb = c.previous_blocks(layer);
  LayerOutput out;
  out.blocks = input.blocks;
  const RankLayerWeights& w0 = ranks[0];
  // 1. The attention AttnRes: the delta folded into the prefix (one rounding), the block written.
  Vec prefix = input.prefix;
  Vec x = attention_res(c, layer, w0, input.delta, prefix, out.blocks, tokens, rounding,
                        c.is_kda_layer(layer) && in_proj_input == InProjInput::kLinearSources);
  // 2. The attention: KDA computed here, summed over the ranks; MLA given.
  if (c.is_kda_layer(layer)) {
    if (input.caches.size() != ranks.size()) {
      return absl::InvalidArgumentError(absl::StrCat("k3 reference layer ", layer, ": ", input.caches.size(),
                                                     " KDA caches for ", tp, " ranks"));
    }
    out.caches = input.caches;
    out.attention_output.assign(static_cast<size_t>(tokens * h), 0.0);
    for (int r = 0; r < tp; ++r) {
      MT_ASSIGN_OR_RETURN(Vec partial, kda_partial(c, ranks[r], x, tokens, input.meta, input.caches[r], out.caches[r], rounding));
      for (size_t i = 0; i < partial.size(); ++i) out.attention_output[i] += partial[i];
    }
    if (reduce != nullptr) {
      MT_ASSIGN_OR_RETURN(out.attention_output, (*reduce)(out.attention_output));
    }
    for (double& v : out.attention_output) v = round_bf16(v, rounding);
  } else {
    if (input.attention_output.size() != static_cast<size_t>(tokens * h)) {
      return absl::InvalidArgumentError(absl::StrCat("k3 reference layer ", layer, " (MLA): the attention output must be [",
                                                     tokens, ", ", h, "], got ", input.attention_output.size(), " values"));
    }
    out.attention_output = input.attention_output;
  }
  // 3. P' = a at a block write (the prefix restarts), else bf16r(P + a).
  out.prefix = out.attention_output;
  if (!write) {
    for (size_t i = 0; i < prefix.size(); ++i) out.prefix[i] = round_bf16(prefix[i] + out.attention_output[i], rounding);
  }
  // 4. The MLP AttnRes over the blocks, the one just written included.
  out.mlp_input = attn_res_rows(c, w0, out.prefix, out.blocks, tokens, nb + (write ? 1 : 0), "mlp_res_norm.weight",
                                "mlp_res_proj.weight", "post_attention_layernorm.weight", rounding);
  // 5. The MLP: latent MoE or the dense MLP, reduced over the ranks.
  out.mlp_output.assign(static_cast<size_t>(tokens * h), 0.0);
  std::vector<std::map<int, Expert>> experts(tp);
  for (int64_t t = 0; t < tokens; ++t) {
    std::span<const double> y = row(out.mlp_input, t, h);
    Vec m(static_cast<size_t>(h), 0.0);
    if (c.is_moe_layer(layer)) {
      m = moe_row(c, ranks, y, experts, rounding);
    } else if (reduce == nullptr) {
      m = dense_mlp_reference(c, ranks, y, rounding);
    } else {
      for (const RankLayerWeights& w : ranks) {
        Vec partial = gated_mlp_partial(c, w, "mlp.", y, w.dims.dense_intermediate, rounding);
        for (size_t i = 0; i < m.size(); ++i) m[i] += partial[i];
      }
    }
    std::copy(m.begin(), m.end(), out.mlp_output.begin() + t * h);
  }
  if (reduce != nullptr) {
    MT_ASSIGN_OR_RETURN(out.mlp_output, (*reduce)(out.mlp_output));
    for (double& v : out.mlp_output) v = round_bf16(v, rounding);
  }
  // 6. The stock loop's new hidden state.
  out.hidden.resize(out.prefix.size());
  for (size_t i = 0; i < out.hidden.size(); ++i) out.hidden[i] = round_bf16(out.prefix[i] + out.mlp_output[i], rounding);
  return out;
}

}  // namespace

absl::StatusOr<LayerOutput> layer_reference(const model::ModelConfig& c, int layer, std::span<const RankLayerWeights> ranks,
                                            const LayerInput& input, Rounding rounding, InProjInput in_proj_input) {
  return layer_with(c, layer, ranks, input, rounding, nullptr, in_proj_input);
}

absl::StatusOr<LayerOutput> rank_layer_reference(const model::ModelConfig& c, int layer, const RankLayerWeights& rank,
                                                 const LayerInput& input, Rounding rounding, const PartialSum& sum) {
  if (c.is_moe_layer(layer)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "k3 reference layer ", layer, ": one rank's share with its reductions given covers the dense MLP's layers (below ",
        c.first_k_dense_replace, "), not the latent MoE's; hint: layer_reference over every rank's weights"));
  }
  return layer_with(c, layer, std::span(&rank, 1), input, rounding, &sum);
}

absl::StatusOr<LayerOutput> layers_reference(const model::ModelConfig& c, int first,
                                             std::span<const std::vector<RankLayerWeights>> layers, LayerInput input,
                                             std::map<int, std::vector<KdaCache>>& caches,
                                             const std::map<int, std::vector<double>>& attention_outputs,
                                             Rounding rounding) {
  LayerOutput out;
  for (size_t i = 0; i < layers.size(); ++i) {
    const int layer = first + static_cast<int>(i);
    if (c.is_kda_layer(layer)) {
      input.caches = caches[layer];
    } else {
      auto it = attention_outputs.find(layer);
      if (it == attention_outputs.end()) {
        return absl::InvalidArgumentError(absl::StrCat("k3 reference loop: MLA layer ", layer, " has no attention output"));
      }
      input.attention_output = it->second;
    }
    MT_ASSIGN_OR_RETURN(out, layer_reference(c, layer, layers[i], input, rounding));
    if (c.is_kda_layer(layer)) caches[layer] = out.caches;
    input.prefix = out.prefix;
    input.delta = out.mlp_output;
    input.blocks = out.blocks;
  }
  return out;
}

}  // namespace monotile::kernels::reference
