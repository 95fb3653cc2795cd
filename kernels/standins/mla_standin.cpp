// An MLA layer's host half on a device; see mla_standin.h.
#include "kernels/standins/mla_standin.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "kernels/standins/attn_res.h"
#include "kernels/standins/linear.h"
#include "kernels/standins/residual.h"
#include "kernels/standins/rms_norm.h"
#include "support/status_macros.h"

namespace monotile::kernels::standins {

std::vector<dsl::Program> MlaPlan::programs() const {
  return {fold.program, attn_res.program, fused.program,     q_norm.program, append.program,
          q_b.program,  absorb.program,   attention.program, output.program};
}

absl::StatusOr<MlaPlan> MlaStandin::plan(const model::ModelConfig& config,
                                         const model::RankDims& dims, int layer, int tokens,
                                         int q) {
  if (config.attention_kind(layer) != model::AttentionKind::kMla) {
    return absl::InvalidArgumentError(absl::StrCat("layer ", layer, " stand-in: not an MLA layer"));
  }
  if (!config.mla_use_nope || config.q_lora_rank <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("layer ", layer,
                                                   " stand-in: RoPE or a full-rank q_proj ",
                                                   "(q_lora_rank 0) is not covered"));
  }
  if (config.is_block_write_layer(layer)) {
    // K3's MLA layers (L % 4 == 3) never write a block (L % 12 == 0); the AttnRes here mixes the
    // blocks as they are.
    return absl::InvalidArgumentError(absl::StrCat(
        "layer ", layer, " stand-in: an MLA layer that writes a block is not covered"));
  }
  MlaPlan p;
  p.shape = mla_shape(config, dims.mla_heads, q);
  const MlaShape& m = p.shape;
  const int h = m.hidden;
  const AttnResShape attn_res{.hidden = h, .sources = config.previous_blocks(layer), .eps = m.eps};
  const LinearShape fused = linear_shape(m.fused_rows(), h),
                    q_b = linear_shape(m.heads * m.qk(), m.q_lora);
  const RmsNormShape q_norm{
      .width = m.q_lora, .x_stride = m.fused_rows(), .y_stride = m.q_lora, .eps = m.eps};
  p.fold = {residual_program(h, false), Grid{tokens}};
  p.attn_res = {attn_res_program(attn_res), Grid{tokens}};
  p.fused = {linear_program(fused), linear_grid(fused, tokens)};
  p.q_norm = {rms_norm_program(q_norm), Grid{tokens}};
  p.append = {mla_cache_append_program(m), Grid{1, tokens}};
  p.q_b = {linear_program(q_b), linear_grid(q_b, tokens)};
  p.absorb = {mla_absorb_program(m), mla_grid(m, tokens)};
  p.attention = {mla_attention_program(m), mla_grid(m, tokens)};
  p.output = {mla_output_program(m), mla_grid(m, tokens)};
  return p;
}

absl::StatusOr<std::unique_ptr<MlaStandin>> MlaStandin::create(
    runtime::Device& device, jit::Jit& jit, const model::ModelConfig& config,
    const model::RankDims& dims, int layer, const WeightAddresses& weights, int tokens, int q) {
  MT_ASSIGN_OR_RETURN(MlaPlan p, plan(config, dims, layer, tokens, q));
  std::unique_ptr<MlaStandin> s(new MlaStandin());
  s->layer_ = layer;
  s->hidden_ = config.hidden_size;
  s->shape_ = p.shape;
  const MlaShape& m = s->shape_;
  auto w = [&](std::string_view name) { return weight_address(weights, layer, name); };
  MT_ASSIGN_OR_RETURN(s->ares_norm_, w("self_attention_res_norm.weight"));
  MT_ASSIGN_OR_RETURN(s->ares_proj_, w("self_attention_res_proj.weight"));
  MT_ASSIGN_OR_RETURN(s->in_norm_, w("input_layernorm.weight"));
  MT_ASSIGN_OR_RETURN(s->w_fused_, w("self_attn.fused_qkv_a_proj.weight"));
  MT_ASSIGN_OR_RETURN(s->q_norm_w_, w("self_attn.q_a_layernorm.weight"));
  MT_ASSIGN_OR_RETURN(s->kv_norm_w_, w("self_attn.kv_a_layernorm.weight"));
  MT_ASSIGN_OR_RETURN(s->w_qb_, w("self_attn.q_b_proj.weight"));
  MT_ASSIGN_OR_RETURN(s->w_kvb_, w("self_attn.kv_b_proj.weight"));

  auto load = [&](PlannedKernel& planned) -> absl::StatusOr<std::unique_ptr<StandinKernel>> {
    MT_ASSIGN_OR_RETURN(StandinKernel kernel, StandinKernel::load(device, jit, std::move(planned)));
    return std::make_unique<StandinKernel>(std::move(kernel));
  };
  MT_ASSIGN_OR_RETURN(s->fold_, load(p.fold));
  MT_ASSIGN_OR_RETURN(s->attn_res_, load(p.attn_res));
  MT_ASSIGN_OR_RETURN(s->fused_, load(p.fused));
  MT_ASSIGN_OR_RETURN(s->q_norm_, load(p.q_norm));
  MT_ASSIGN_OR_RETURN(s->append_, load(p.append));
  MT_ASSIGN_OR_RETURN(s->q_b_, load(p.q_b));
  MT_ASSIGN_OR_RETURN(s->absorb_, load(p.absorb));
  MT_ASSIGN_OR_RETURN(s->attention_, load(p.attention));
  MT_ASSIGN_OR_RETURN(s->output_, load(p.output));

  const int h = m.hidden;
  const size_t t_bytes = static_cast<size_t>(tokens) * 2;
  MT_ASSIGN_OR_RETURN(s->x_, device.allocate(t_bytes * static_cast<size_t>(h)));
  MT_ASSIGN_OR_RETURN(s->fused_out_,
                      device.allocate(t_bytes * static_cast<size_t>(m.fused_rows())));
  MT_ASSIGN_OR_RETURN(s->q_c_, device.allocate(t_bytes * static_cast<size_t>(m.q_lora)));
  MT_ASSIGN_OR_RETURN(s->q_heads_,
                      device.allocate(t_bytes * static_cast<size_t>(m.heads * m.qk())));
  MT_ASSIGN_OR_RETURN(s->query_,
                      device.allocate(t_bytes * static_cast<size_t>(m.heads * m.entry())));
  MT_ASSIGN_OR_RETURN(s->latent_,
                      device.allocate(t_bytes * static_cast<size_t>(m.heads * m.kv_lora)));
  return s;
}

absl::Status MlaStandin::launch(const MlaTensors& in, runtime::Stream& stream) const {
  const MlaShape& m = shape_;
  const int64_t slot_stride = in.cache_capacity * m.entry();
  const std::array fold{bf16_argument(in.prefix), bf16_argument(in.delta)};
  MT_RETURN_IF_ERROR(fold_->launch(fold, stream));
  const std::array attn_res{bf16_argument(in.blocks),
                            i64_scalar(in.blocks_token_stride),
                            i64_scalar(in.blocks_block_stride),
                            bf16_argument(in.prefix),
                            bf16_argument(ares_norm_),
                            bf16_argument(ares_proj_),
                            bf16_argument(in_norm_),
                            bf16_argument(x_.address())};
  MT_RETURN_IF_ERROR(attn_res_->launch(attn_res, stream));
  const std::array fused{bf16_argument(x_.address()), bf16_argument(w_fused_),
                         bf16_argument(fused_out_.address())};
  MT_RETURN_IF_ERROR(fused_->launch(fused, stream));
  const std::array q_norm{bf16_argument(fused_out_.address()), bf16_argument(q_norm_w_),
                          bf16_argument(q_c_.address())};
  MT_RETURN_IF_ERROR(q_norm_->launch(q_norm, stream));
  const std::array append{bf16_argument(fused_out_.address()),
                          bf16_argument(kv_norm_w_),
                          i32_argument(in.slots),
                          i32_argument(in.context),
                          bf16_argument(in.cache),
                          i64_scalar(slot_stride)};
  MT_RETURN_IF_ERROR(append_->launch(append, stream));
  const std::array q_b{bf16_argument(q_c_.address()), bf16_argument(w_qb_),
                       bf16_argument(q_heads_.address())};
  MT_RETURN_IF_ERROR(q_b_->launch(q_b, stream));
  const std::array absorb{bf16_argument(q_heads_.address()), bf16_argument(w_kvb_),
                          bf16_argument(query_.address())};
  MT_RETURN_IF_ERROR(absorb_->launch(absorb, stream));
  const std::array attention{bf16_argument(query_.address()), i32_argument(in.slots),
                             i32_argument(in.context),        bf16_argument(in.cache),
                             i64_scalar(slot_stride),         bf16_argument(latent_.address())};
  MT_RETURN_IF_ERROR(attention_->launch(attention, stream));
  const std::array output{bf16_argument(latent_.address()), bf16_argument(w_kvb_),
                          bf16_argument(fused_out_.address()), i32_argument(in.slots),
                          bf16_argument(in.core)};
  return output_->launch(output, stream);
}

}  // namespace monotile::kernels::standins
