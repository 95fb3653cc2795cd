// The per-rank plan: one function per layer part, each listing the checkpoint tensors it expects
// and the slices a rank takes of them, in the order and offsets of vLLM's merged parameters.
#include "model/shard_plan.h"

#include <algorithm>
#include <cstring>

#include "absl/status/status.h"
#include "model/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/tensor_names.h"
#include "support/parallel_for.h"
#include "support/status_macros.h"

namespace monotile::model {
namespace {

int64_t rows_of(const std::vector<int64_t>& shape) {
  if (shape.empty()) return 1;
  if (shape.size() == 1) return shape[0];
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  return rows;
}

int64_t row_bytes_of(const std::vector<int64_t>& shape, Dtype dtype) {
  int64_t last = shape.size() >= 2 ? shape.back() : 1;
  return last * dtype_size(dtype);
}

// Builds one layer's plan: `expect` records a checkpoint tensor; the rest add per-rank tensors.
class LayerBuilder {
 public:
  LayerBuilder(LayerPlan& plan, int tp, int rank) : plan_(plan), tp_(tp), rank_(rank) {}

  void expect(const std::string& name, Dtype dtype, std::vector<int64_t> shape, bool at_least = false,
              bool check_finite = false) {
    plan_.expected.push_back({name, dtype, std::move(shape), at_least, check_finite});
  }

  RankTensor& tensor(std::string name, Dtype dtype, std::vector<int64_t> shape) {
    plan_.tensors.push_back({std::move(name), dtype, dtype, std::move(shape), {}});
    return plan_.tensors.back();
  }

  // The whole checkpoint tensor on every rank.
  void replicated(std::string param, const std::string& source, Dtype dtype, std::vector<int64_t> shape) {
    expect(source, dtype, shape);
    RankTensor& t = tensor(std::move(param), dtype, shape);
    t.slices.push_back({source, 0, rows_of(shape), 0, row_bytes_of(shape, dtype), 0, 0});
  }

  // Rows [rank * n, (rank + 1) * n) of a [rows, ...] tensor, n = rows / tp.
  void row_split(std::string param, const std::string& source, Dtype dtype, std::vector<int64_t> shape) {
    expect(source, dtype, shape);
    std::vector<int64_t> local = shape;
    local[0] /= tp_;
    int64_t per_first = rows_of(local) ;
    RankTensor& t = tensor(std::move(param), dtype, local);
    t.slices.push_back({source, rank_ * per_first, per_first, 0, row_bytes_of(shape, dtype), 0, 0});
  }

  // Columns [rank * k, (rank + 1) * k) of a 2-D tensor, k = cols / tp.
  void column_split(std::string param, const std::string& source, Dtype dtype, std::vector<int64_t> shape) {
    expect(source, dtype, shape);
    int64_t cols = shape[1] / tp_;
    RankTensor& t = tensor(std::move(param), dtype, {shape[0], cols});
    t.slices.push_back({source, 0, shape[0], rank_ * cols * dtype_size(dtype), cols * dtype_size(dtype), 0, 0});
  }

  void add(RankTensor tensor) { plan_.tensors.push_back(std::move(tensor)); }

  int tp() const { return tp_; }
  int rank() const { return rank_; }

 private:
  LayerPlan& plan_;
  int tp_;
  int rank_;
};

constexpr Dtype kBF16 = Dtype::kBF16;
constexpr Dtype kF32 = Dtype::kF32;
constexpr Dtype kU8 = Dtype::kU8;

void plan_attn_res(const ModelConfig& c, int layer, LayerBuilder& b) {
  int64_t h = c.hidden_size;
  for (std::string_view norm : {"self_attention_res_norm.weight", "input_layernorm.weight", "mlp_res_norm.weight",
                                "post_attention_layernorm.weight"}) {
    b.replicated(std::string(norm), layer_tensor(layer, norm), kBF16, {h});
  }
  for (std::string_view proj : {"self_attention_res_proj.weight", "mlp_res_proj.weight"}) {
    b.replicated(std::string(proj), layer_tensor(layer, proj), kBF16, {1, h});
  }
}

void plan_kda(const ModelConfig& c, const RankDims& d, int layer, LayerBuilder& b) {
  auto name = [&](std::string_view suffix) { return layer_tensor(layer, str_cat(kTensorNames.attention, suffix)); };
  int64_t h = c.hidden_size, p = c.kda_projection(), pl = d.kda_projection, hd = c.kda_head_dim;
  int r = b.rank();
  RankTensor in_proj{"self_attn.in_proj_qkvgfab.weight", kBF16, kBF16, {d.in_proj_rows, h}, {}};
  int64_t row_bytes = h * 2;
  const char* blocks[] = {"q_proj.weight", "k_proj.weight", "v_proj.weight", "g_proj.weight"};
  for (int i = 0; i < 4; ++i) {
    b.expect(name(blocks[i]), kBF16, {p, h});
    in_proj.slices.push_back({name(blocks[i]), r * pl, pl, 0, row_bytes, i * pl, 0});
  }
  b.expect(name("f_a_proj.weight"), kBF16, {hd, h});
  in_proj.slices.push_back({name("f_a_proj.weight"), 0, hd, 0, row_bytes, 4 * pl, 0});
  b.expect(name("b_proj.weight"), kBF16, {c.kda_num_heads, h});
  in_proj.slices.push_back({name("b_proj.weight"), int64_t{r} * d.kda_heads, d.kda_heads, 0, row_bytes, 4 * pl + hd, 0});
  b.add(in_proj);

  b.row_split("self_attn.f_b_proj.weight", name("f_b_proj.weight"), kBF16, {p, hd});

  RankTensor conv{"self_attn.conv1d.weight", kF32, kF32, {3 * pl, 1, c.conv_size}, {}};
  const char* convs[] = {"q_conv1d.weight", "k_conv1d.weight", "v_conv1d.weight"};
  for (int i = 0; i < 3; ++i) {
    b.expect(name(convs[i]), kF32, {p, 1, c.conv_size});
    conv.slices.push_back({name(convs[i]), r * pl, pl, 0, int64_t{c.conv_size} * 4, i * pl, 0});
  }
  b.add(conv);

  b.expect(name("dt_bias"), kF32, {p}, false, true);
  b.tensor("self_attn.dt_bias", kF32, {pl}).slices.push_back({name("dt_bias"), r * pl, pl, 0, 4, 0, 0});
  b.expect(name("A_log"), kF32, {c.kda_num_heads}, true, true);
  b.tensor("self_attn.A_log", kF32, {d.kda_heads})
      .slices.push_back({name("A_log"), int64_t{r} * d.kda_heads, d.kda_heads, 0, 4, 0, 0});
  b.expect(name("o_norm.weight"), kF32, {hd});
  RankTensor& o_norm = b.tensor("self_attn.o_norm.weight", kBF16, {hd});
  o_norm.source_dtype = kF32;
  o_norm.slices.push_back({name("o_norm.weight"), 0, hd, 0, 4, 0, 0});
  b.column_split("self_attn.o_proj.weight", name("o_proj.weight"), kBF16, {h, p});
}

void plan_mla(const ModelConfig& c, const RankDims& d, int layer, LayerBuilder& b) {
  auto name = [&](std::string_view suffix) { return layer_tensor(layer, str_cat(kTensorNames.attention, suffix)); };
  int64_t h = c.hidden_size, nh = c.num_attention_heads, gate_rows_local = int64_t{d.mla_heads} * c.v_head_dim;
  int64_t kv_a = c.kv_lora_rank + c.qk_rope_head_dim;
  RankTensor fused{"self_attn.fused_qkv_a_proj.weight", kBF16, kBF16, {c.q_lora_rank + kv_a + gate_rows_local, h}, {}};
  b.expect(name("q_a_proj.weight"), kBF16, {c.q_lora_rank, h});
  fused.slices.push_back({name("q_a_proj.weight"), 0, c.q_lora_rank, 0, h * 2, 0, 0});
  b.expect(name("kv_a_proj_with_mqa.weight"), kBF16, {kv_a, h});
  fused.slices.push_back({name("kv_a_proj_with_mqa.weight"), 0, kv_a, 0, h * 2, c.q_lora_rank, 0});
  if (c.mla_use_output_gate) {
    b.expect(name("g_proj.weight"), kBF16, {nh * c.v_head_dim, h});
    fused.slices.push_back({name("g_proj.weight"), b.rank() * gate_rows_local, gate_rows_local, 0, h * 2,
                            c.q_lora_rank + kv_a, 0});
  } else {
    fused.shape[0] -= gate_rows_local;
  }
  b.add(fused);
  b.replicated("self_attn.q_a_layernorm.weight", name("q_a_layernorm.weight"), kBF16, {c.q_lora_rank});
  b.replicated("self_attn.kv_a_layernorm.weight", name("kv_a_layernorm.weight"), kBF16, {c.kv_lora_rank});
  b.row_split("self_attn.q_b_proj.weight", name("q_b_proj.weight"), kBF16,
              {nh * (c.qk_nope_head_dim + c.qk_rope_head_dim), c.q_lora_rank});
  b.row_split("self_attn.kv_b_proj.weight", name("kv_b_proj.weight"), kBF16,
              {nh * (c.qk_nope_head_dim + c.v_head_dim), c.kv_lora_rank});
  b.column_split("self_attn.o_proj.weight", name("o_proj.weight"), kBF16, {h, nh * c.v_head_dim});
}

// gate/up [I, H] each -> [gate_r | up_r]; down [H, I] column split.
void plan_gated_mlp(std::string_view param_prefix, std::string_view source_prefix, int layer, int64_t h,
                    int64_t intermediate, LayerBuilder& b) {
  auto name = [&](std::string_view suffix) { return layer_tensor(layer, str_cat(source_prefix, suffix)); };
  int64_t local = intermediate / b.tp();
  RankTensor gate_up{str_cat(param_prefix, "gate_up_proj.weight"), kBF16, kBF16, {2 * local, h}, {}};
  b.expect(name("gate_proj.weight"), kBF16, {intermediate, h});
  gate_up.slices.push_back({name("gate_proj.weight"), b.rank() * local, local, 0, h * 2, 0, 0});
  b.expect(name("up_proj.weight"), kBF16, {intermediate, h});
  gate_up.slices.push_back({name("up_proj.weight"), b.rank() * local, local, 0, h * 2, local, 0});
  b.add(gate_up);
  b.column_split(str_cat(param_prefix, "down_proj.weight"), name("down_proj.weight"), kBF16, {h, intermediate});
}

void plan_moe(const ModelConfig& c, const RankDims& d, int layer, LayerBuilder& b) {
  std::string moe(kTensorNames.moe);
  auto name = [&](std::string_view suffix) { return layer_tensor(layer, str_cat(moe, suffix)); };
  int64_t h = c.hidden_size, lat = c.routed_expert_hidden_size, e = c.num_experts;
  b.replicated(moe + "gate.weight", name("gate.weight"), kBF16, {e, h});
  b.expect(name("gate.e_score_correction_bias"), kF32, {e}, false, true);
  b.tensor(moe + "gate.e_score_correction_bias", kF32, {e})
      .slices.push_back({name("gate.e_score_correction_bias"), 0, e, 0, 4, 0, 0});
  b.replicated(moe + "routed_expert_down_proj.weight", name("routed_expert_down_proj.weight"), kBF16, {lat, h});
  if (c.latent_moe_use_norm) {
    b.replicated(moe + "routed_expert_norm.weight", name("routed_expert_norm.weight"), kBF16, {lat});
  }
  if (d.up_proj_rows == h) {
    b.replicated(moe + "routed_expert_up_proj.weight", name("routed_expert_up_proj.weight"), kBF16, {h, lat});
  } else {
    b.row_split(moe + "routed_expert_up_proj.weight", name("routed_expert_up_proj.weight"), kBF16, {h, lat});
  }
  if (c.num_shared_experts > 0) {
    plan_gated_mlp(moe + "shared_experts.", moe + "shared_experts.", layer, h, c.shared_intermediate(), b);
  }
  // Routed experts: w13 [E, 2 Ir, lat/2] = per expert [w1 rows of this rank; w3 rows]; w2
  // [E, lat, Ir/2] = per expert the rank's columns. Scales alike, one code per 32 elements.
  int64_t i = c.moe_intermediate_size, ir = d.expert_intermediate;
  int64_t group = c.mxfp4_group_size > 0 ? c.mxfp4_group_size : 32;
  RankTensor w13{moe + "experts.w13_weight", kU8, kU8, {e, 2 * ir, lat / 2}, {}};
  RankTensor w13_scale{moe + "experts.w13_weight_scale", kU8, kU8, {e, 2 * ir, lat / group}, {}};
  RankTensor w2{moe + "experts.w2_weight", kU8, kU8, {e, lat, ir / 2}, {}};
  RankTensor w2_scale{moe + "experts.w2_weight_scale", kU8, kU8, {e, lat, ir / group}, {}};
  for (int expert = 0; expert < e; ++expert) {
    for (int half = 0; half < 2; ++half) {
      std::string_view w = half == 0 ? "w1" : "w3";
      std::string packed = expert_tensor(layer, expert, w, kTensorNames.expert_packed);
      std::string scale = expert_tensor(layer, expert, w, kTensorNames.expert_scale);
      b.expect(packed, kU8, {i, lat / 2});
      b.expect(scale, kU8, {i, lat / group});
      int64_t dest = expert * 2 * ir + half * ir;
      w13.slices.push_back({packed, b.rank() * ir, ir, 0, lat / 2, dest, 0});
      w13_scale.slices.push_back({scale, b.rank() * ir, ir, 0, lat / group, dest, 0});
    }
    std::string packed = expert_tensor(layer, expert, "w2", kTensorNames.expert_packed);
    std::string scale = expert_tensor(layer, expert, "w2", kTensorNames.expert_scale);
    b.expect(packed, kU8, {lat, i / 2});
    b.expect(scale, kU8, {lat, i / group});
    w2.slices.push_back({packed, 0, lat, b.rank() * ir / 2, ir / 2, expert * lat, 0});
    w2_scale.slices.push_back({scale, 0, lat, b.rank() * ir / group, ir / group, expert * lat, 0});
  }
  for (RankTensor* t : {&w13, &w13_scale, &w2, &w2_scale}) b.add(std::move(*t));
}

// Embedding and lm_head are vocab-parallel: rows of the vocabulary padded to 64, split by rank,
// rows past the vocabulary zero.
void plan_model_level(const ModelConfig& c, LayerBuilder& b) {
  int64_t h = c.hidden_size;
  int64_t padded = (c.vocab_size + 63) / 64 * 64;
  int64_t local = (padded + b.tp() - 1) / b.tp();
  int64_t first = b.rank() * local;
  int64_t rows = std::max<int64_t>(0, std::min(first + local, c.vocab_size) - first);
  for (auto [param, source] : {std::pair<std::string, std::string>{"embed_tokens.weight", model_tensor(kTensorNames.embed_tokens)},
                               {"lm_head.weight", std::string(kTensorNames.lm_head)}}) {
    b.expect(source, kBF16, {c.vocab_size, h});
    b.tensor(param, kBF16, {local, h}).slices.push_back({source, first, rows, 0, h * 2, 0, 0});
  }
  b.replicated("norm.weight", model_tensor(kTensorNames.final_norm), kBF16, {h});
  b.replicated("output_attn_res_norm.weight", model_tensor(kTensorNames.output_res_norm), kBF16, {h});
  b.replicated("output_attn_res_proj.weight", model_tensor(kTensorNames.output_res_proj), kBF16, {1, h});
}

}  // namespace

int64_t RankTensor::elements() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

uint64_t RankTensor::bytes_read() const {
  uint64_t total = 0;
  for (const SourceSlice& slice : slices) total += static_cast<uint64_t>(slice.rows * slice.col_bytes);
  return total;
}

uint64_t LayerPlan::bytes_read() const {
  uint64_t total = 0;
  for (const RankTensor& tensor : tensors) total += tensor.bytes_read();
  return total;
}

const RankTensor* LayerPlan::find(std::string_view name) const {
  for (const RankTensor& tensor : tensors) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

uint64_t RankPlan::bytes_read() const {
  uint64_t total = 0;
  for (const LayerPlan& layer : layers) total += layer.bytes_read();
  return total;
}

absl::StatusOr<RankPlan> plan_rank(const ModelConfig& c, int tp, int rank) {
  RankPlan plan;
  MT_ASSIGN_OR_RETURN(plan.dims, rank_dims(c, tp, rank));
  // Layers are planned independently, each into its own entry, across the cores: K3's 92 layers
  // name about a million strings (its experts' tensors and slices), the largest serial piece of an
  // executor's construction.
  plan.layers.resize(c.num_hidden_layers + 1);
  parallel_for(plan.layers.size(), [&](size_t index) {
    const int layer = static_cast<int>(index);
    LayerPlan& lp = plan.layers[index];
    LayerBuilder b(lp, tp, rank);
    if (layer == c.num_hidden_layers) {
      plan_model_level(c, b);
      return;
    }
    lp.layer = layer;
    lp.attention = c.attention_kind(layer);
    lp.moe = c.is_moe_layer(layer);
    lp.served = c.served_kind(layer);
    plan_attn_res(c, layer, b);
    if (lp.attention == AttentionKind::kKda) {
      plan_kda(c, plan.dims, layer, b);
    } else {
      plan_mla(c, plan.dims, layer, b);
    }
    if (lp.moe) {
      plan_moe(c, plan.dims, layer, b);
    } else {
      plan_gated_mlp("mlp.", kTensorNames.dense_mlp, layer, c.hidden_size, c.intermediate_size, b);
    }
  });
  return plan;
}

absl::StatusOr<std::vector<uint8_t>> load_rank_tensor(const RankTensor& tensor, const TensorSource& source) {
  std::vector<uint8_t> out(tensor.nbytes(), 0);
  int64_t dest_rows = rows_of(tensor.shape);
  int64_t dest_row_bytes = tensor.shape.empty() ? 0 : static_cast<int64_t>(tensor.nbytes()) / std::max<int64_t>(dest_rows, 1);
  int source_size = dtype_size(tensor.source_dtype);
  int dest_size = dtype_size(tensor.dtype);
  std::vector<uint8_t> row;
  for (const SourceSlice& slice : tensor.slices) {
    auto refuse = [&](std::string_view what) {
      return absl::InvalidArgumentError(str_cat("loading \"", tensor.name, "\": checkpoint tensor \"", slice.tensor, "\" ", what));
    };
    const TensorInfo* info = source.find(slice.tensor);
    if (!info) return refuse("is missing");
    if (info->dtype != tensor.source_dtype) {
      return refuse(str_cat("is ", dtype_name(info->dtype), ", expected ", dtype_name(tensor.source_dtype)));
    }
    if (!info->contiguous()) return refuse("is strided; expected dense rows");
    int64_t rows = rows_of(info->shape);
    int64_t row_bytes = rows == 0 ? 0 : static_cast<int64_t>(info->nbytes()) / rows;
    int64_t dest_col_bytes = slice.col_bytes / source_size * dest_size;
    if (slice.row_begin + slice.rows > rows || slice.col_byte_begin + slice.col_bytes > row_bytes) {
      return refuse(str_cat("has ", rows, " rows of ", row_bytes, " bytes; the slice needs rows [", slice.row_begin,
                                 ", ", slice.row_begin + slice.rows, ") bytes [", slice.col_byte_begin, ", ",
                                 slice.col_byte_begin + slice.col_bytes, ")"));
    }
    if (slice.dest_row + slice.rows > dest_rows || slice.dest_col_byte + dest_col_bytes > dest_row_bytes) {
      return refuse("does not fit the per-rank tensor (a bug in the plan)");
    }
    row.resize(static_cast<size_t>(slice.col_bytes));
    for (int64_t i = 0; i < slice.rows; ++i) {
      uint64_t offset = static_cast<uint64_t>((slice.row_begin + i) * row_bytes + slice.col_byte_begin);
      MT_RETURN_IF_ERROR(source.read(*info, offset, row));
      uint8_t* dest = out.data() + (slice.dest_row + i) * dest_row_bytes + slice.dest_col_byte;
      if (source_size == dest_size) {
        std::memcpy(dest, row.data(), row.size());
      } else {
        for (int64_t k = 0; k < slice.col_bytes / 4; ++k) {
          float value;
          std::memcpy(&value, row.data() + 4 * k, 4);
          uint16_t bits = bf16_from_float(value);
          std::memcpy(dest + 2 * k, &bits, 2);
        }
      }
    }
  }
  return out;
}

}  // namespace monotile::model
