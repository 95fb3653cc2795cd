// Layer 0's stand-in on a device: K1, then the dense MLP half as stand-in kernels; see
// kda_mlp_standin.h.
#include "kernels/standins/kda_mlp_standin.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "kernels/standins/attn_res.h"
#include "kernels/standins/linear.h"
#include "kernels/standins/residual.h"
#include "kernels/standins/situ.h"
#include "runtime/decode/step_begin.h"
#include "runtime/launch_state.h"
#include "support/status_macros.h"

namespace monotile::kernels::standins {

using runtime::DevicePtr;
using runtime::KernelArgument;

std::vector<dsl::Program> KdaMlpPlan::programs() const {
  return {kernels::k3::k1_program(k1),
          runtime::decode::step_begin_program(),
          o_proj.program,
          residual.program,
          attn_res.program,
          gate_up.program,
          situ.program,
          down.program};
}

absl::StatusOr<KdaMlpPlan> KdaMlpStandin::plan(const model::ModelConfig& config,
                                               const model::RankDims& dims, int layer, int tokens,
                                               int q, int state_len, bool delta,
                                               const dsl::Target& target) {
  if (!config.is_kda_layer(layer) || config.is_moe_layer(layer)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layer ", layer, " stand-in: expected a KDA layer with a dense MLP (layers below ",
        "first_k_dense_replace)"));
  }
  KdaMlpPlan p;
  MT_ASSIGN_OR_RETURN(p.k1, kernels::k3::k1_build(config, layer, dims.kda_heads,
                                                  static_cast<int>(dims.in_proj_rows), tokens, q,
                                                  state_len, delta));
  p.k1 = kernels::k3::k1_for_target(p.k1, target);
  const int h = static_cast<int>(config.hidden_size), pl = static_cast<int>(dims.kda_projection);
  const int inter = static_cast<int>(dims.dense_intermediate);
  const bool write = config.is_block_write_layer(layer);
  const LinearShape o_proj = linear_shape(h, pl), gate_up = linear_shape(2 * inter, h),
                    down = linear_shape(h, inter);
  const SituShape situ{.intermediate = inter,
                       .beta = static_cast<float>(config.situ_beta),
                       .linear_beta = static_cast<float>(config.situ_linear_beta)};
  const AttnResShape attn_res{.hidden = h,
                              .sources = config.previous_blocks(layer) + (write ? 1 : 0),
                              .eps = static_cast<float>(config.rms_norm_eps)};
  p.o_proj = {linear_program(o_proj), linear_grid(o_proj, tokens)};
  p.residual = {residual_program(h, write), Grid{tokens}};
  p.attn_res = {attn_res_program(attn_res), Grid{tokens}};
  p.gate_up = {linear_program(gate_up), linear_grid(gate_up, tokens)};
  p.situ = {situ_program(situ), situ_grid(situ, tokens)};
  p.down = {linear_program(down), linear_grid(down, tokens)};
  return p;
}

absl::StatusOr<std::unique_ptr<KdaMlpStandin>> KdaMlpStandin::create(
    runtime::Device& device, jit::Jit& jit, const model::ModelConfig& config,
    const model::RankDims& dims, int layer, const WeightAddresses& weights, int tokens, int q,
    int state_len, bool delta) {
  MT_ASSIGN_OR_RETURN(KdaMlpPlan p,
                      plan(config, dims, layer, tokens, q, state_len, delta, device.info().target));
  std::unique_ptr<KdaMlpStandin> s(new KdaMlpStandin());
  s->device_ = &device;
  s->layer_ = layer;
  s->tokens_ = tokens;
  s->q_ = q;
  s->state_len_ = state_len;
  s->hidden_ = config.hidden_size;
  s->projection_ = dims.kda_projection;
  s->channels_ = 3 * dims.kda_projection;
  s->state_slot_stride_ = int64_t{dims.kda_heads} * 128 * 128;
  s->build_ = p.k1;

  auto w = [&](std::string_view name) { return weight_address(weights, layer, name); };
  runtime::K1Tensors& t = s->k1_weights_;
  MT_ASSIGN_OR_RETURN(t.ares_norm, w("self_attention_res_norm.weight"));
  MT_ASSIGN_OR_RETURN(t.ares_proj, w("self_attention_res_proj.weight"));
  MT_ASSIGN_OR_RETURN(t.in_norm, w("input_layernorm.weight"));
  MT_ASSIGN_OR_RETURN(t.w_in, w("self_attn.in_proj_qkvgfab.weight"));
  MT_ASSIGN_OR_RETURN(t.w_fb, w("self_attn.f_b_proj.weight"));
  MT_ASSIGN_OR_RETURN(t.conv_w, w("self_attn.conv1d.weight"));
  MT_ASSIGN_OR_RETURN(t.a_log, w("self_attn.A_log"));
  MT_ASSIGN_OR_RETURN(t.dt_bias, w("self_attn.dt_bias"));
  MT_ASSIGN_OR_RETURN(t.o_norm, w("self_attn.o_norm.weight"));
  MT_ASSIGN_OR_RETURN(s->w_o_, w("self_attn.o_proj.weight"));
  MT_ASSIGN_OR_RETURN(s->mlp_res_norm_, w("mlp_res_norm.weight"));
  MT_ASSIGN_OR_RETURN(s->mlp_res_proj_, w("mlp_res_proj.weight"));
  MT_ASSIGN_OR_RETURN(s->post_norm_, w("post_attention_layernorm.weight"));
  MT_ASSIGN_OR_RETURN(s->w_gu_, w("mlp.gate_up_proj.weight"));
  MT_ASSIGN_OR_RETURN(s->w_down_, w("mlp.down_proj.weight"));

  MT_ASSIGN_OR_RETURN(runtime::Kernel k1, runtime::load_k1(device, s->build_, jit));
  s->k1_ = std::make_unique<runtime::Kernel>(std::move(k1));
  MT_ASSIGN_OR_RETURN(runtime::Kernel step_begin,
                      runtime::load_program(device, runtime::decode::step_begin_program(), jit));
  s->step_begin_ = std::make_unique<runtime::Kernel>(std::move(step_begin));
  MT_ASSIGN_OR_RETURN(
      runtime::LaunchState state,
      runtime::LaunchState::create(device, runtime::k1_programs(device.info(), s->build_), "K1"));
  s->state_ = std::make_shared<runtime::LaunchState>(std::move(state));
  MT_ASSIGN_OR_RETURN(runtime::K1Launch launch,
                      runtime::K1Launch::create(device, s->build_, s->state_, s->k1_.get()));
  s->k1_launch_ = std::make_unique<runtime::K1Launch>(std::move(launch));
  auto load = [&](PlannedKernel& planned) -> absl::StatusOr<std::unique_ptr<StandinKernel>> {
    MT_ASSIGN_OR_RETURN(StandinKernel kernel, StandinKernel::load(device, jit, std::move(planned)));
    return std::make_unique<StandinKernel>(std::move(kernel));
  };
  MT_ASSIGN_OR_RETURN(s->o_proj_, load(p.o_proj));
  MT_ASSIGN_OR_RETURN(s->residual_, load(p.residual));
  MT_ASSIGN_OR_RETURN(s->attn_res_, load(p.attn_res));
  MT_ASSIGN_OR_RETURN(s->gate_up_, load(p.gate_up));
  MT_ASSIGN_OR_RETURN(s->situ_, load(p.situ));
  MT_ASSIGN_OR_RETURN(s->down_, load(p.down));

  const int h = static_cast<int>(config.hidden_size), pl = static_cast<int>(dims.kda_projection);
  const int inter = static_cast<int>(dims.dense_intermediate);
  const size_t t_bytes = static_cast<size_t>(tokens) * 2;
  MT_ASSIGN_OR_RETURN(s->core_, device.allocate(t_bytes * static_cast<size_t>(pl)));
  MT_ASSIGN_OR_RETURN(s->a_, device.allocate(t_bytes * static_cast<size_t>(h)));
  MT_ASSIGN_OR_RETURN(s->y_, device.allocate(t_bytes * static_cast<size_t>(h)));
  MT_ASSIGN_OR_RETURN(s->gu_, device.allocate(t_bytes * static_cast<size_t>(2 * inter)));
  MT_ASSIGN_OR_RETURN(s->act_, device.allocate(t_bytes * static_cast<size_t>(inter)));
  return s;
}

absl::Status KdaMlpStandin::launch(const KdaMlpTensors& in, runtime::Stream& stream,
                                   const Reduce& reduce) const {
  if (build_.delta != (in.delta != 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer ", layer_, " stand-in was made ", build_.delta ? "with" : "without",
                     " a pending delta, and got ", in.delta != 0 ? "one" : "none"));
  }
  // The epoch bump: K1's flags carry a tag of (epoch, layer), new at every launch.
  const KernelArgument epoch = i32_argument(state_->epoch());
  MT_RETURN_IF_ERROR(step_begin_->launch(runtime::Dim3{1, 1, 1}, std::span(&epoch, 1), stream));
  runtime::K1Tensors t = k1_weights_;
  t.prefix = in.prefix;
  t.delta = in.delta;
  t.blocks = in.blocks;
  t.blocks_token_stride = in.blocks_token_stride;
  t.blocks_block_stride = in.blocks_block_stride;
  t.conv_state = in.conv_state;
  t.conv_slot_stride = int64_t{state_len_} * channels_;
  t.conv_channel_stride = 1;
  t.conv_entry_stride = channels_;
  t.state = in.state;
  t.state_slot_stride = state_slot_stride_;
  t.state_indices = in.state_indices;
  t.state_indices_stride = q_;
  t.num_accepted = in.num_accepted;
  t.core = core_.address();
  MT_RETURN_IF_ERROR(k1_launch_->launch(*k1_, t, layer_, stream));
  // a = o_proj(core); P' = a (block write) or bf16(P + a); y = AttnRes(blocks, P'); m = MLP(y).
  const std::array o_proj{bf16_argument(core_.address()), bf16_argument(w_o_),
                          bf16_argument(a_.address())};
  MT_RETURN_IF_ERROR(o_proj_->launch(o_proj, stream));
  if (reduce) MT_RETURN_IF_ERROR(reduce(a_.address(), tokens_ * hidden_, stream));
  const std::array residual{bf16_argument(in.prefix), bf16_argument(a_.address())};
  MT_RETURN_IF_ERROR(residual_->launch(residual, stream));
  const std::array attn_res{bf16_argument(in.blocks),           i64_scalar(in.blocks_token_stride),
                            i64_scalar(in.blocks_block_stride), bf16_argument(in.prefix),
                            bf16_argument(mlp_res_norm_),       bf16_argument(mlp_res_proj_),
                            bf16_argument(post_norm_),          bf16_argument(y_.address())};
  MT_RETURN_IF_ERROR(attn_res_->launch(attn_res, stream));
  const std::array gate_up{bf16_argument(y_.address()), bf16_argument(w_gu_),
                           bf16_argument(gu_.address())};
  MT_RETURN_IF_ERROR(gate_up_->launch(gate_up, stream));
  const std::array situ{bf16_argument(gu_.address()), bf16_argument(act_.address())};
  MT_RETURN_IF_ERROR(situ_->launch(situ, stream));
  const std::array down{bf16_argument(act_.address()), bf16_argument(w_down_),
                        bf16_argument(in.out)};
  MT_RETURN_IF_ERROR(down_->launch(down, stream));
  return reduce ? reduce(in.out, tokens_ * hidden_, stream) : absl::OkStatus();
}

}  // namespace monotile::kernels::standins
