// The host stand-ins of `monotile decode`, the reference's or the DSL kernels'; see
// decode_host_layers.h.
#include "tools/decode_host_layers.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/reference/k3_parts.h"
#include "model/dtype.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "tools/host_all_reduce.h"

namespace monotile::tools {

namespace ref = kernels::reference;
using runtime::DevicePtr;

HostLayers::HostLayers(runtime::Device& device, jit::Jit& jit, const model::ModelConfig& config,
                       const model::RankDims& dims, const model::RankPlan& plan, const model::TensorSource& source,
                       const runtime::decode::Backbone& backbone, StandinKind kind, int max_rows, int64_t mla_slots,
                       int64_t mla_capacity)
    : device_(&device),
      jit_(&jit),
      config_(&config),
      dims_(dims),
      plan_(&plan),
      source_(&source),
      backbone_(&backbone),
      kind_(kind),
      max_rows_(max_rows),
      mla_slots_(mla_slots),
      mla_capacity_(mla_capacity) {}

absl::StatusOr<const ref::RankLayerWeights*> HostLayers::weights(int layer) {
  auto found = weights_.find(layer);
  if (found != weights_.end()) return found->second.get();
  std::shared_ptr<const ref::RankLayerWeights> made;
  if (loader_) {
    MT_ASSIGN_OR_RETURN(made, loader_(layer));
  } else {
    MT_ASSIGN_OR_RETURN(ref::RankLayerWeights w, ref::load_rank_layer(plan_->layers.at(static_cast<size_t>(layer)),
                                                                       dims_, *source_));
    made = std::make_shared<const ref::RankLayerWeights>(std::move(w));
  }
  weights_[layer] = made;
  return made.get();
}

absl::StatusOr<std::vector<double>> HostLayers::read_bf16(DevicePtr address, size_t count, runtime::Stream& stream) {
  MT_RETURN_IF_ERROR(device_->synchronize(stream));
  std::vector<uint16_t> bits(count);
  MT_RETURN_IF_ERROR(device_->copy_to_host(bits.data(), address, count * 2));
  std::vector<double> values(count);
  for (size_t i = 0; i < count; ++i) values[i] = model::bf16_to_float(bits[i]);
  return values;
}

absl::Status HostLayers::write_bf16(DevicePtr address, const std::vector<double>& values) {
  std::vector<uint16_t> bits(values.size());
  for (size_t i = 0; i < values.size(); ++i) bits[i] = model::bf16_from_double(values[i]);
  return device_->copy_to_device(address, bits.data(), bits.size() * 2);
}

absl::StatusOr<ref::KdaCache> HostLayers::read_cache(const DeviceKdaCache& cache, runtime::Stream& stream) {
  ref::KdaCache out;
  out.slots = cache.slots;
  out.state_len = cache.state_len;
  MT_ASSIGN_OR_RETURN(out.conv,
                      read_bf16(cache.conv.address(), static_cast<size_t>(cache.slots * cache.state_len * cache.channels),
                                stream));
  std::vector<float> state(static_cast<size_t>(cache.state_elements));
  MT_RETURN_IF_ERROR(device_->copy_to_host(state.data(), cache.state.address(), state.size() * 4));
  out.state.assign(state.begin(), state.end());
  return out;
}

absl::Status HostLayers::write_cache(const DeviceKdaCache& cache, const ref::KdaCache& values) {
  MT_RETURN_IF_ERROR(write_bf16(cache.conv.address(), values.conv));
  std::vector<float> state(values.state.begin(), values.state.end());
  return device_->copy_to_device(cache.state.address(), state.data(), state.size() * 4);
}

absl::Status HostLayers::run_layer_reference(int layer, runtime::decode::LayerIo& io, const HostStep& step,
                                             DeviceKdaCache* cache, runtime::Stream& stream) {
  MT_ASSIGN_OR_RETURN(const ref::RankLayerWeights* w, weights(layer));
  const int64_t h = config_->hidden_size, rows = step.rows();
  const size_t th = static_cast<size_t>(rows * h);
  ref::LayerInput in;
  MT_ASSIGN_OR_RETURN(in.prefix, read_bf16(io.prefix, th, stream));
  if (io.delta != 0) {
    MT_ASSIGN_OR_RETURN(in.delta, read_bf16(io.delta, th, stream));
  }
  MT_ASSIGN_OR_RETURN(in.blocks, read_bf16(io.blocks, th * static_cast<size_t>(config_->block_count()), stream));
  in.meta = {static_cast<int>(step.num_accepted.size()), step.q, step.state_indices, step.num_accepted};
  if (cache != nullptr) {
    MT_ASSIGN_OR_RETURN(ref::KdaCache c, read_cache(*cache, stream));
    in.caches.push_back(std::move(c));
  }
  if (!config_->is_kda_layer(layer)) {
    return absl::UnimplementedError(absl::StrCat("layer ", layer, ": the host stand-in runs whole KDA layers only"));
  }
  ref::LayerOutput out;
  if (reduces()) {
    const ref::PartialSum sum = [this](const std::vector<double>& partial) { return sum_over_ranks(*group_, partial); };
    MT_ASSIGN_OR_RETURN(out, ref::rank_layer_reference(*config_, layer, *w, in, ref::Rounding::kBf16, sum));
  } else {
    MT_ASSIGN_OR_RETURN(out, ref::layer_reference(*config_, layer, std::span(w, 1), in, ref::Rounding::kBf16));
  }
  MT_RETURN_IF_ERROR(allocate_outputs(static_cast<size_t>(dims_.mla_heads * config_->v_head_dim)));
  MT_RETURN_IF_ERROR(write_bf16(io.prefix, out.prefix));
  MT_RETURN_IF_ERROR(write_bf16(io.blocks, out.blocks));
  MT_RETURN_IF_ERROR(write_bf16(out_.address(), out.mlp_output));
  if (cache != nullptr) MT_RETURN_IF_ERROR(write_cache(*cache, out.caches[0]));
  io.delta = out_.address();
  return absl::OkStatus();
}

absl::StatusOr<DevicePtr> HostLayers::attention_reference(int layer, const runtime::decode::LayerIo& io,
                                                          const HostStep& step, runtime::Stream& stream) {
  MT_ASSIGN_OR_RETURN(const ref::RankLayerWeights* w, weights(layer));
  const int64_t h = config_->hidden_size, rows = step.rows();
  const size_t th = static_cast<size_t>(rows * h);
  const int64_t blocks = config_->block_count(), nb = config_->previous_blocks(layer);
  MT_ASSIGN_OR_RETURN(std::vector<double> prefix, read_bf16(io.prefix, th, stream));
  MT_ASSIGN_OR_RETURN(std::vector<double> delta, read_bf16(io.delta, th, stream));
  MT_ASSIGN_OR_RETURN(std::vector<double> block_values, read_bf16(io.blocks, th * static_cast<size_t>(blocks), stream));
  // The seam: the pending delta folded into the prefix, in place, as K2 then reads it.
  for (size_t i = 0; i < th; ++i) prefix[i] = model::round_to_bf16(prefix[i] + delta[i]);
  MT_RETURN_IF_ERROR(write_bf16(io.prefix, prefix));
  std::vector<double> x(th);
  for (int64_t t = 0; t < rows; ++t) {
    std::vector<std::span<const double>> sources;
    for (int64_t b = 0; b < nb; ++b) sources.push_back(std::span(block_values).subspan((t * blocks + b) * h, h));
    sources.push_back(std::span(prefix).subspan(t * h, h));
    std::vector<double> row = ref::attn_res_row(sources, w->at("self_attention_res_norm.weight"),
                                                w->at("self_attention_res_proj.weight"),
                                                w->at("input_layernorm.weight"), config_->rms_norm_eps,
                                                ref::Rounding::kBf16);
    std::copy(row.begin(), row.end(), x.begin() + t * h);
  }
  auto cache = mla_caches_.find(layer);
  if (cache == mla_caches_.end()) {
    cache = mla_caches_.emplace(layer, ref::make_mla_cache(*config_, mla_slots_, mla_capacity_)).first;
  }
  MT_ASSIGN_OR_RETURN(std::vector<double> core,
                      ref::mla_attention_reference(*config_, layer, *w, x, {step.q, step.mla_slots, step.mla_context},
                                                   cache->second, ref::Rounding::kBf16));
  MT_RETURN_IF_ERROR(allocate_outputs(core.size() / static_cast<size_t>(rows)));
  MT_RETURN_IF_ERROR(write_bf16(core_.address(), core));
  // a = o_proj(core), for the check's reference (this rank's partial; TP 1 is the whole).
  const int64_t width = static_cast<int64_t>(core.size()) / rows;
  attention_output_.assign(th, 0.0);
  for (int64_t t = 0; t < rows; ++t) {
    std::vector<double> a = ref::matvec(w->at("self_attn.o_proj.weight"), std::span(core).subspan(t * width, width),
                                        h, width);
    for (int64_t i = 0; i < h; ++i) attention_output_[t * h + i] = model::round_to_bf16(a[i]);
  }
  return core_.address();
}

absl::Status HostLayers::allocate_outputs(size_t core_width) {
  if (!out_.valid()) {
    MT_ASSIGN_OR_RETURN(out_, device_->allocate(static_cast<size_t>(max_rows_ * config_->hidden_size) * 2));
  }
  if (!core_.valid()) {
    MT_ASSIGN_OR_RETURN(core_, device_->allocate(static_cast<size_t>(max_rows_) * core_width * 2));
  }
  return absl::OkStatus();
}

kernels::standins::WeightAddresses HostLayers::weight_addresses(int layer) const {
  kernels::standins::WeightAddresses addresses;
  auto found = backbone_->weights.find(layer);
  if (found == backbone_->weights.end()) return addresses;
  for (const auto& [name, view] : found->second) addresses.emplace(name, view.data);
  return addresses;
}

absl::Status HostLayers::prepare(const std::vector<int>& host_layers, int width, int q, int state_len) {
  if (kind_ != StandinKind::kKernels) return absl::OkStatus();
  // Which stand-in runs each layer: whole (a KDA layer with a dense MLP the executor does not
  // serve), or an MLA layer's attention; run_layer refuses the others.
  std::vector<int> whole, mla;
  for (int layer : host_layers) {
    if (config_->is_kda_layer(layer) && !config_->is_moe_layer(layer)) whole.push_back(layer);
  }
  for (int layer = 0; layer < config_->num_hidden_layers; ++layer) {
    if (!config_->is_kda_layer(layer) && !std::count(host_layers.begin(), host_layers.end(), layer)) {
      mla.push_back(layer);
    }
  }
  // Compiled in parallel through the kernel cache first (once per distinct program), then loaded.
  std::vector<dsl::Program> programs;
  for (int layer : whole) {
    MT_ASSIGN_OR_RETURN(kernels::standins::KdaMlpPlan plan,
                        kernels::standins::KdaMlpStandin::plan(*config_, dims_, layer, width, q, state_len,
                                                               layer > 0, device_->info().target));
    for (dsl::Program& program : plan.programs()) programs.push_back(std::move(program));
  }
  for (int layer : mla) {
    MT_ASSIGN_OR_RETURN(kernels::standins::MlaPlan plan,
                        kernels::standins::MlaStandin::plan(*config_, dims_, layer, width, q));
    for (dsl::Program& program : plan.programs()) programs.push_back(std::move(program));
  }
  MT_RETURN_IF_ERROR(kernels::standins::precompile(*device_, *jit_, programs));
  for (int layer : whole) {
    MT_ASSIGN_OR_RETURN(whole_[layer], kernels::standins::KdaMlpStandin::create(
                                           *device_, *jit_, *config_, dims_, layer, weight_addresses(layer), width,
                                           q, state_len, /*delta=*/layer > 0));
  }
  for (int layer : mla) {
    MT_ASSIGN_OR_RETURN(mla_[layer], kernels::standins::MlaStandin::create(*device_, *jit_, *config_, dims_, layer,
                                                                           weight_addresses(layer), width, q));
    const size_t bytes = static_cast<size_t>(mla_slots_ * mla_capacity_ * mla_[layer]->shape().entry()) * 2;
    MT_ASSIGN_OR_RETURN(device_mla_caches_[layer], device_->allocate(bytes));
    MT_RETURN_IF_ERROR(device_->fill_bytes(device_mla_caches_[layer].address(), 0, bytes));
  }
  return allocate_outputs(static_cast<size_t>(dims_.mla_heads * config_->v_head_dim));
}

absl::Status HostLayers::run_layer(int layer, runtime::decode::LayerIo& io, const HostStep& step,
                                   DeviceKdaCache* cache, runtime::Stream& stream,
                                   const kernels::standins::KdaMlpStandin::Reduce& reduce) {
  if (kind_ == StandinKind::kReference) return run_layer_reference(layer, io, step, cache, stream);
  auto found = whole_.find(layer);
  if (found == whole_.end() || cache == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        "layer ", layer, ": the host stand-in's DSL kernels run whole KDA layers with a dense MLP and their caches"));
  }
  kernels::standins::KdaMlpTensors t{.prefix = io.prefix,
                                     .delta = io.delta,
                                     .blocks = io.blocks,
                                     .blocks_token_stride = io.blocks_token_stride,
                                     .blocks_block_stride = io.blocks_block_stride,
                                     .conv_state = cache->conv.address(),
                                     .state = cache->state.address(),
                                     .state_indices = step.device_state_indices,
                                     .num_accepted = step.device_num_accepted,
                                     .out = out_.address()};
  MT_CHECK(!reduces() || reduce, "the DSL stand-ins' reductions are the caller's host work: pass run_layer a reduce");
  MT_RETURN_IF_ERROR(found->second->launch(t, stream, reduces() ? reduce : nullptr));
  io.delta = out_.address();
  return absl::OkStatus();
}

absl::StatusOr<DevicePtr> HostLayers::attention(int layer, const runtime::decode::LayerIo& io, const HostStep& step,
                                                runtime::Stream& stream) {
  if (kind_ == StandinKind::kReference) return attention_reference(layer, io, step, stream);
  auto found = mla_.find(layer);
  if (found == mla_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("layer ", layer, ": no MLA stand-in was prepared; hint: call HostLayers::prepare first"));
  }
  // The kernels trust the slots and lengths: what the reference refuses is refused here.
  for (size_t n = 0; n < step.mla_slots.size(); ++n) {
    if (step.mla_slots[n] < 0) continue;
    if (step.mla_slots[n] >= mla_slots_ || step.mla_context[n] < 0 || step.mla_context[n] + step.q > mla_capacity_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layer ", layer, " request ", n, ": MLA slot ", step.mla_slots[n], " with context ", step.mla_context[n],
          " + q ", step.q, " does not fit the cache's ", mla_slots_, " slots of ", mla_capacity_, " positions"));
    }
  }
  kernels::standins::MlaTensors t{.prefix = io.prefix,
                                  .delta = io.delta,
                                  .blocks = io.blocks,
                                  .blocks_token_stride = io.blocks_token_stride,
                                  .blocks_block_stride = io.blocks_block_stride,
                                  .slots = step.device_mla_slots,
                                  .context = step.device_mla_context,
                                  .cache = device_mla_caches_.at(layer).address(),
                                  .cache_capacity = mla_capacity_,
                                  .core = core_.address()};
  MT_RETURN_IF_ERROR(found->second->launch(t, stream));
  return core_.address();
}

absl::StatusOr<std::vector<double>> HostLayers::attention_output(int layer, int rows, runtime::Stream& stream) {
  if (kind_ == StandinKind::kReference) return attention_output_;
  MT_ASSIGN_OR_RETURN(const ref::RankLayerWeights* w, weights(layer));
  const int64_t h = config_->hidden_size, width = int64_t{dims_.mla_heads} * config_->v_head_dim;
  MT_ASSIGN_OR_RETURN(std::vector<double> core, read_bf16(core_.address(), static_cast<size_t>(rows * width), stream));
  std::vector<double> a(static_cast<size_t>(rows * h));
  for (int64_t t = 0; t < rows; ++t) {
    std::vector<double> row = ref::matvec(w->at("self_attn.o_proj.weight"), std::span(core).subspan(t * width, width),
                                          h, width);
    for (int64_t i = 0; i < h; ++i) a[t * h + i] = model::round_to_bf16(row[i]);
  }
  return a;
}

absl::Status HostLayers::check_health() const {
  for (const auto& [layer, standin] : whole_) {
    MT_RETURN_IF_ERROR(with_context(standin->check_health(), absl::StrCat("layer ", layer, "'s host stand-in")));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<kernels::k3::OutputCheck>> HostLayers::check_layer(
    int layer, const ref::LayerInput& input, const runtime::decode::LayerResult& got,
    std::span<const ref::RankLayerWeights> ranks, int rank) {
  using kernels::k3::check_output;
  using kernels::k3::rule_for;
  if (ranks.empty()) {
    MT_ASSIGN_OR_RETURN(const ref::RankLayerWeights* w, weights(layer));
    ranks = std::span(w, 1);
    rank = 0;
  }
  MT_ASSIGN_OR_RETURN(ref::LayerOutput want,
                      ref::layer_reference(*config_, layer, ranks, input, ref::Rounding::kBf16));
  const int64_t h = config_->hidden_size, blocks = config_->block_count();
  const int64_t rows = static_cast<int64_t>(input.prefix.size()) / h;
  // P' = a = o_proj(core) at a block write, else P + a: core's rule, or P's with core's floor.
  kernels::k3::CheckRule prefix_rule = rule_for(config_->is_block_write_layer(layer) ? "core" : "prefix'");
  prefix_rule.abs_share = std::max(prefix_rule.abs_share, rule_for("core").abs_share);
  std::vector<kernels::k3::OutputCheck> checks;
  checks.push_back(check_output("prefix'", got.prefix, want.prefix, {rows, h}, prefix_rule));
  checks.push_back(check_output("blocks", got.blocks, want.blocks, {rows, blocks, h}, rule_for("blocks")));
  if (!want.caches.empty()) {
    const ref::KdaCache& c = want.caches[static_cast<size_t>(rank)];
    const int64_t channels = static_cast<int64_t>(c.conv.size()) / (c.slots * c.state_len);
    checks.push_back(check_output("conv_state", got.cache.conv, c.conv, {c.slots, c.state_len, channels},
                                  rule_for("conv_state")));
    checks.push_back(check_output("recurrent_state", got.cache.state, c.state,
                                  {static_cast<int64_t>(c.state.size())}, rule_for("recurrent_state")));
  }
  checks.push_back(check_output("out", got.out, want.mlp_output, {rows, h}, rule_for("out")));
  return checks;
}

absl::StatusOr<kernels::k3::OutputCheck> HostLayers::check_attention(int layer, const HostStep& step,
                                                                     runtime::Stream& stream) {
  auto found = mla_.find(layer);
  if (found == mla_.end()) {
    return absl::FailedPreconditionError(absl::StrCat("layer ", layer, ": no MLA stand-in ran"));
  }
  MT_ASSIGN_OR_RETURN(const ref::RankLayerWeights* w, weights(layer));
  const int64_t h = config_->hidden_size, rows = step.rows();
  const int64_t width = int64_t{dims_.mla_heads} * config_->v_head_dim;
  MT_ASSIGN_OR_RETURN(std::vector<double> x, read_bf16(found->second->x(), static_cast<size_t>(rows * h), stream));
  MT_ASSIGN_OR_RETURN(std::vector<double> got, read_bf16(core_.address(), static_cast<size_t>(rows * width), stream));
  auto cache = mla_caches_.find(layer);
  if (cache == mla_caches_.end()) {
    cache = mla_caches_.emplace(layer, ref::make_mla_cache(*config_, mla_slots_, mla_capacity_)).first;
  }
  MT_ASSIGN_OR_RETURN(std::vector<double> want,
                      ref::mla_attention_reference(*config_, layer, *w, x, {step.q, step.mla_slots, step.mla_context},
                                                   cache->second, ref::Rounding::kBf16));
  kernels::k3::CheckRule rule = kernels::k3::rule_for("core");
  rule.why = "the MLA stand-in's core on its own x: bf16 after the attention's rounding points";
  return kernels::k3::check_output("mla core", got, want, {rows, width}, rule);
}

}  // namespace monotile::tools
