// Float64 reference of one Kimi-K3 decoder layer at spec-verify time, over all ranks of a TP size:
// AttnRes (k3_layer.md 3), the KDA half (4), the MLA layer's FFN with the attention output given
// (6), the latent MoE (5) or layer 0's dense MLP (5.7), and the deferred-delta loop (2.3). Each
// rank's partials are computed from that rank's weights (as model::plan_rank shards them) and the
// TP reductions are sums over all ranks, so TP 1 and TP t agree up to rounding.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/reference/k3_parts.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/shard_plan.h"

namespace monotile::kernels::reference {

// One rank's weights of one layer: bf16/f32 tensors decoded to double, U8 (MXFP4) kept as bytes,
// keyed by the per-rank name (model::RankTensor::name).
struct RankLayerWeights {
  model::RankDims dims;
  std::map<std::string, std::vector<double>> values;
  std::map<std::string, std::vector<uint8_t>> bytes;

  // The tensor's values; aborts when the plan has no such tensor (a bug in the caller).
  std::span<const double> at(const std::string& name) const;
  std::span<const uint8_t> raw(const std::string& name) const;
};

// Adds one tensor's bytes as stored (bf16 or f32 decoded to double, U8 kept as bytes).
void add_rank_tensor(RankLayerWeights& weights, const model::RankTensor& tensor, std::vector<uint8_t> bytes);

absl::StatusOr<RankLayerWeights> load_rank_layer(const model::LayerPlan& layer, const model::RankDims& dims,
                                                 const model::TensorSource& source);

// A KDA layer's caches on one rank: conv [slots, state_len, 3 Pl] (channels q | k | v) and the
// recurrent state [slots, NHl, D, D] V-first.
struct KdaCache {
  int64_t slots = 0;
  int64_t state_len = 0;
  std::vector<double> conv;
  std::vector<double> state;
};

// Uniform spec-verify step metadata: `requests` requests of `q` tokens, request-major.
struct StepMeta {
  int requests = 0;
  int q = 0;
  std::vector<int32_t> state_indices;  // [requests, q]; column 0 is the conv slot; <= 0: no state
  std::vector<int32_t> num_accepted;   // [requests], 1..q
};

struct LayerInput {
  std::vector<double> prefix;            // P [T, H]
  std::vector<double> delta;             // empty, or the previous layer's MLP output m [T, H] (2.3)
  std::vector<double> blocks;            // B [T, block_count, H]
  std::vector<double> attention_output;  // MLA layers: a [T, H], after the o_proj all-reduce
  StepMeta meta;
  std::vector<KdaCache> caches;          // KDA layers: one per rank
};

struct LayerOutput {
  std::vector<double> prefix;            // P' (stored in place of P)
  std::vector<double> attention_output;  // a
  std::vector<double> mlp_input;         // y, the MLP AttnRes output
  std::vector<double> mlp_output;        // m, the delta for the next layer
  std::vector<double> hidden;            // stock loop's P_new = bf16r(P' + m)
  std::vector<double> blocks;            // B after the layer
  std::vector<KdaCache> caches;
};

// in_proj's input: x as vLLM forms it (rounded to bf16 under kBf16, k3_layer.md 4.7), or as K1's
// linear in_proj does (attn_res_row_linear: each source's out_norm * v_s rounded, x itself not).
enum class InProjInput { kRoundedX, kLinearSources };

// One layer over all ranks: `ranks[r]` holds rank r's weights, ranks.size() is the TP size; a KDA
// layer's in_proj takes `in_proj_input`. Refused: inconsistent sizes, num_accepted outside 1..q, a
// slot past the cache.
absl::StatusOr<LayerOutput> layer_reference(const model::ModelConfig& config, int layer,
                                            std::span<const RankLayerWeights> ranks, const LayerInput& input,
                                            Rounding rounding, InProjInput in_proj_input = InProjInput::kRoundedX);

// A TP group's all-reduce as one rank sees it: this rank's partial sums in, every rank's summed in
// rank order out (not rounded). Every rank calls it at the same points.
using PartialSum = std::function<absl::StatusOr<std::vector<double>>(const std::vector<double>& partial)>;

// One rank's share of layer_reference, its reductions through `sum`: `rank` this rank's weights,
// input.caches this rank's caches. Every rank of the group gets layer_reference's outputs over all
// ranks, bit for bit (its caches: this rank's). Refused: a latent MoE layer (its reductions sit
// inside the MoE; the dense MLP's layers below first_k_dense_replace are served), and as
// layer_reference refuses.
absl::StatusOr<LayerOutput> rank_layer_reference(const model::ModelConfig& config, int layer,
                                                 const RankLayerWeights& rank, const LayerInput& input,
                                                 Rounding rounding, const PartialSum& sum);

// K1's part of a KDA layer on one rank (2.3 step 1, 4.1-4.5): the prefix with the delta folded in
// (stored in place of P), the blocks after the block write, the AttnRes output x, o_proj's input
// `core` [T, Pl] and the rank's caches after the step. Uses input.prefix, delta, blocks, meta and
// input.caches[0]; refused as layer_reference refuses, and for a layer that is not KDA.
struct KdaAttentionOutput {
  std::vector<double> prefix;
  std::vector<double> blocks;
  std::vector<double> x;
  std::vector<double> core;
  KdaCache cache;
};
absl::StatusOr<KdaAttentionOutput> kda_attention_reference(const model::ModelConfig& config, int layer,
                                                           const RankLayerWeights& rank, const LayerInput& input,
                                                           Rounding rounding,
                                                           InProjInput in_proj_input = InProjInput::kRoundedX);

// The deferred-delta loop over consecutive layers first..first+n-1 (2.3): each layer gets the
// previous one's m as its delta and P' as its prefix. `layers[i]` are layer first+i's ranks'
// weights; a KDA layer's caches are `caches[layer]` (updated), an MLA layer's attention output is
// `attention_outputs[layer]`. Returns the last layer's output.
absl::StatusOr<LayerOutput> layers_reference(const model::ModelConfig& config, int first,
                                             std::span<const std::vector<RankLayerWeights>> layers, LayerInput input,
                                             std::map<int, std::vector<KdaCache>>& caches,
                                             const std::map<int, std::vector<double>>& attention_outputs,
                                             Rounding rounding);

// The MoE half's pieces, exposed for tests: the router's choice for one row of y.
RouterChoice route_row(const model::ModelConfig& config, const RankLayerWeights& rank0, std::span<const double> y,
                       Rounding rounding);

// The latent MoE of one row of y over `ranks` (5.1-5.6): m, reduced. Reads only the chosen
// experts' bytes, so a test may hold just those. Each rank's up-projection rows land at its
// dims.rank, so one rank alone gives what that rank computes without the reductions.
std::vector<double> moe_reference(const model::ModelConfig& config, std::span<const RankLayerWeights> ranks,
                                  std::span<const double> y, Rounding rounding);

// The dense MLP of one row of y over `ranks` (5.7: layers below first_k_dense_replace): the sum of
// the ranks' bf16r(bf16r(SiTU(bf16r(y Wgu^T))) Wd^T), rounded. With one rank it is that rank's
// partial (already rounded), so a rank-local caller all-reduces the partials itself.
std::vector<double> dense_mlp_reference(const model::ModelConfig& config, std::span<const RankLayerWeights> ranks,
                                        std::span<const double> y, Rounding rounding);

}  // namespace monotile::kernels::reference
