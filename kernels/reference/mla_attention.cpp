// The MLA decode attention of one rank in float64, in the order of vLLM 0.33's Kimi-K3 MLA layer
// (models/kimi_k3/nvidia/mla.py MultiHeadLatentAttention; amd/mla.py does the same math):
//  1. fused_qkv_a(_g)_proj(x) split as [q_c (q_lora) | kv_c (kv_lora) | k_pe (rope) | gate],
//     the gate NHl v_head_dim wide;
//  2. q_c and kv_c through q_a_layernorm and kv_a_layernorm (fused_q_kv_rmsnorm: fp32, one store
//     rounding); k_pe is not normalized;
//  3. q = q_b_proj(q_c) viewed [NHl, nope + rope], split [q_nope | q_pe];
//  4. kv_b_proj's rows per head are [W_UK (nope rows) | W_UV (v rows)] (split_kv_b_proj); the
//     decode path absorbs W_UK into the query, ql_nope = q_nope W_UK, and the cache insert stores
//     [kv_c_normed | k_pe] per token; the MQA query is [ql_nope | q_pe] against that entry;
//  5. rotary_emb is None for K3 (mla_use_nope), so positions and cos/sin are None in the fused
//     concat-and-insert kernel: q_pe and k_pe enter the dot product as plain values, and the
//     rope dimensions still count in the scale (nope + rope)^-0.5;
//  6. forward_mqa: softmax over the sequence (causal within the step), the latent output [NHl,
//     kv_lora], then W_UV up to [NHl, v];
//  7. attn_out * sigmoid(gate) (one compiled elementwise op), then o_proj (not here).
#include "kernels/reference/mla_attention.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace monotile::kernels::reference {
namespace {

using Vec = std::vector<double>;

const std::string kFused = "self_attn.fused_qkv_a_proj.weight";
const std::string kQNorm = "self_attn.q_a_layernorm.weight";
const std::string kKvNorm = "self_attn.kv_a_layernorm.weight";
const std::string kQB = "self_attn.q_b_proj.weight";
const std::string kKvB = "self_attn.kv_b_proj.weight";

// The rank's MLA sizes, from the config and the rank's head count.
struct Sizes {
  int64_t h, heads, q_lora, kv_lora, nope, rope, v, entry, gate_rows, fused_rows;
};

Sizes sizes_of(const model::ModelConfig& c, const RankLayerWeights& rank) {
  Sizes s;
  s.h = c.hidden_size;
  s.heads = rank.dims.mla_heads;
  s.q_lora = c.q_lora_rank;
  s.kv_lora = c.kv_lora_rank;
  s.nope = c.qk_nope_head_dim;
  s.rope = c.qk_rope_head_dim;
  s.v = c.v_head_dim;
  s.entry = s.kv_lora + s.rope;
  s.gate_rows = c.mla_use_output_gate ? s.heads * s.v : 0;
  s.fused_rows = s.q_lora + s.entry + s.gate_rows;
  return s;
}

// x rsqrt(mean(x^2) + eps) w, rounded once (fused_q_kv_rmsnorm keeps x, rstd and w in fp32 and
// rounds at the store, unlike the twice-rounding RMSNorm of k3_parts).
Vec rms_norm_once(std::span<const double> x, std::span<const double> w, double eps,
                  Rounding rounding) {
  Vec y = rms_norm(x, w, eps, Rounding::kNone);
  for (double& v : y) v = round_bf16(v, rounding);
  return y;
}

// Every reason the inputs cannot be computed, in the order the header lists them.
std::vector<std::string> refusals(const model::ModelConfig& c, int layer,
                                  const RankLayerWeights& rank, std::span<const double> x,
                                  const MlaStep& step, const MlaCache& cache) {
  std::vector<std::string> reasons;
  if (layer < 0 || layer >= c.num_hidden_layers ||
      c.attention_kind(layer) != model::AttentionKind::kMla) {
    reasons.push_back("not an MLA layer");
    return reasons;
  }
  if (!c.mla_use_nope) reasons.push_back("mla_use_nope is false: RoPE is not covered");
  if (c.q_lora_rank <= 0) reasons.push_back("q_lora_rank is 0: a full-rank q_proj is not covered");
  if (!reasons.empty()) return reasons;
  const Sizes s = sizes_of(c, rank);
  auto expect = [&](const std::string& name, int64_t rows, int64_t cols) {
    auto it = rank.values.find(name);
    if (it == rank.values.end()) {
      reasons.push_back(absl::StrCat("the rank has no \"", name, "\""));
    } else if (it->second.size() != static_cast<size_t>(rows * cols)) {
      reasons.push_back(absl::StrCat("\"", name, "\" has ", it->second.size(),
                                     " values, expected [", rows, ", ", cols, "] for ", s.heads,
                                     " heads"));
    }
  };
  expect(kFused, s.fused_rows, s.h);
  expect(kQNorm, s.q_lora, 1);
  expect(kKvNorm, s.kv_lora, 1);
  expect(kQB, s.heads * (s.nope + s.rope), s.q_lora);
  expect(kKvB, s.heads * (s.nope + s.v), s.kv_lora);
  const int64_t requests = static_cast<int64_t>(step.slots.size()), tokens = requests * step.q;
  if (step.q < 1) reasons.push_back(absl::StrCat("q is ", step.q, ", expected at least 1"));
  if (step.context.size() != step.slots.size()) {
    reasons.push_back(
        absl::StrCat(step.slots.size(), " slots but ", step.context.size(), " context lengths"));
  }
  if (x.size() != static_cast<size_t>(std::max<int64_t>(tokens, 0) * s.h)) {
    reasons.push_back(absl::StrCat("x has ", x.size(), " values, expected [", tokens, ", ", s.h,
                                   "] (", requests, " requests of ", step.q, " tokens)"));
  }
  if (cache.slots < 0 || cache.capacity < 0 ||
      cache.entries.size() != static_cast<size_t>(cache.slots * cache.capacity * s.entry)) {
    reasons.push_back(absl::StrCat("the cache has ", cache.entries.size(), " values, expected [",
                                   cache.slots, ", ", cache.capacity, ", ", s.entry, "]"));
  }
  std::set<int32_t> used;
  for (size_t n = 0; n < step.slots.size(); ++n) {
    const int32_t slot = step.slots[n];
    if (slot < 0) continue;
    if (slot >= cache.slots) {
      reasons.push_back(absl::StrCat("request ", n, ": slot ", slot, " outside the cache's ",
                                     cache.slots, " slots"));
    } else if (!used.insert(slot).second) {
      reasons.push_back(
          absl::StrCat("request ", n, ": slot ", slot, " is taken by an earlier request"));
    }
    if (n >= step.context.size()) continue;
    const int64_t context = step.context[n];
    if (context < 0) {
      reasons.push_back(absl::StrCat("request ", n, ": context ", context, " is negative"));
    } else if (context + step.q > cache.capacity) {
      reasons.push_back(absl::StrCat("request ", n, ": context ", context, " + q ", step.q,
                                     " exceeds the cache capacity ", cache.capacity));
    }
  }
  return reasons;
}

}  // namespace

MlaCache make_mla_cache(const model::ModelConfig& config, int64_t slots, int64_t capacity) {
  const int64_t entry = config.kv_lora_rank + config.qk_rope_head_dim;
  return MlaCache{slots, capacity, Vec(static_cast<size_t>(slots * capacity * entry), 0.0)};
}

absl::StatusOr<std::vector<double>> mla_attention_reference(const model::ModelConfig& c, int layer,
                                                            const RankLayerWeights& rank,
                                                            std::span<const double> x,
                                                            const MlaStep& step, MlaCache& cache,
                                                            Rounding rounding) {
  if (std::vector<std::string> reasons = refusals(c, layer, rank, x, step, cache);
      !reasons.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("mla reference layer ", layer, ": ", absl::StrJoin(reasons, "; ")));
  }
  const Sizes s = sizes_of(c, rank);
  const int64_t qk = s.nope + s.rope, kv_rows = s.nope + s.v;
  const double scale = 1.0 / std::sqrt(static_cast<double>(qk));
  std::span<const double> w_fused = rank.at(kFused), q_norm = rank.at(kQNorm),
                          kv_norm = rank.at(kKvNorm);
  std::span<const double> w_qb = rank.at(kQB), w_kvb = rank.at(kKvB);
  const int q = step.q;
  Vec core(static_cast<size_t>(step.slots.size() * q * s.heads * s.v), 0.0);
  for (size_t n = 0; n < step.slots.size(); ++n) {
    const int32_t slot = step.slots[n];
    if (slot < 0) continue;
    const int64_t context = step.context[n];
    double* sequence = cache.entries.data() + slot * cache.capacity * s.entry;
    // Per new token: the absorbed query [NHl, kv_lora + rope] and the gate [NHl v]; each token's
    // [c_kv | k_pe] goes into the cache before any token attends (vLLM inserts the whole step,
    // then the causal mask limits what each token sees).
    std::vector<Vec> queries(q), gates(q);
    for (int j = 0; j < q; ++j) {
      const int64_t t = static_cast<int64_t>(n) * q + j;
      Vec fused = matvec(w_fused, x.subspan(t * s.h, s.h), s.fused_rows, s.h);
      for (double& v : fused) v = round_bf16(v, rounding);
      std::span<const double> all(fused);
      Vec q_c = rms_norm_once(all.subspan(0, s.q_lora), q_norm, c.rms_norm_eps, rounding);
      Vec c_kv = rms_norm_once(all.subspan(s.q_lora, s.kv_lora), kv_norm, c.rms_norm_eps, rounding);
      double* entry = sequence + (context + j) * s.entry;
      std::copy(c_kv.begin(), c_kv.end(), entry);
      std::copy(fused.begin() + s.q_lora + s.kv_lora, fused.begin() + s.q_lora + s.entry,
                entry + s.kv_lora);
      gates[j].assign(fused.begin() + s.q_lora + s.entry, fused.end());
      Vec q_heads = matvec(w_qb, q_c, s.heads * qk, s.q_lora);
      for (double& v : q_heads) v = round_bf16(v, rounding);
      // ql_nope[h, l] = sum_p q_nope[h, p] W_UK[h][p, l]; q_pe copied after it.
      Vec& query = queries[j];
      query.assign(static_cast<size_t>(s.heads * s.entry), 0.0);
      for (int64_t head = 0; head < s.heads; ++head) {
        const double* q_h = q_heads.data() + head * qk;
        double* out = query.data() + head * s.entry;
        for (int64_t p = 0; p < s.nope; ++p) {
          const double* w_row = w_kvb.data() + (head * kv_rows + p) * s.kv_lora;
          for (int64_t l = 0; l < s.kv_lora; ++l) out[l] += q_h[p] * w_row[l];
        }
        for (int64_t l = 0; l < s.kv_lora; ++l) out[l] = round_bf16(out[l], rounding);
        std::copy(q_h + s.nope, q_h + qk, out + s.kv_lora);
      }
    }
    for (int j = 0; j < q; ++j) {
      const int64_t t = static_cast<int64_t>(n) * q + j, visible = context + j + 1;
      for (int64_t head = 0; head < s.heads; ++head) {
        const double* query = queries[j].data() + head * s.entry;
        Vec scores(static_cast<size_t>(visible));
        for (int64_t p = 0; p < visible; ++p) {
          const double* entry = sequence + p * s.entry;
          double dot = 0;
          for (int64_t i = 0; i < s.entry; ++i) dot += query[i] * entry[i];
          scores[p] = dot * scale;
        }
        const double top = *std::max_element(scores.begin(), scores.end());
        double total = 0;
        Vec latent(static_cast<size_t>(s.kv_lora), 0.0);
        for (int64_t p = 0; p < visible; ++p) {
          const double weight = std::exp(scores[p] - top);
          total += weight;
          const double* entry = sequence + p * s.entry;
          for (int64_t l = 0; l < s.kv_lora; ++l) latent[l] += weight * entry[l];
        }
        for (double& v : latent) v = round_bf16(v / total, rounding);
        // W_UV: rows nope .. nope + v - 1 of the head's kv_b block.
        double* out = core.data() + t * s.heads * s.v + head * s.v;
        for (int64_t i = 0; i < s.v; ++i) {
          const double* w_row = w_kvb.data() + (head * kv_rows + s.nope + i) * s.kv_lora;
          double sum = 0;
          for (int64_t l = 0; l < s.kv_lora; ++l) sum += w_row[l] * latent[l];
          sum = round_bf16(sum, rounding);
          out[i] = gates[j].empty() ? sum
                                    : round_bf16(sum * sigmoid(gates[j][head * s.v + i]), rounding);
        }
      }
    }
  }
  return core;
}

}  // namespace monotile::kernels::reference
