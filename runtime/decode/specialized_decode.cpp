// The executor's construction, KV binding, plan and fail-stop (the seed's SpecializedDecode); the
// launches are in layer_kernel.cpp, the launch state in runner.cpp.
#include "runtime/decode/specialized_decode.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "runtime/decode/agree.h"
#include "kernels/k3/peer_exchange.h"
#include "runtime/decode/executor_builds.h"
#include "runtime/decode/layer_names.h"
#include "runtime/decode/peer_buffer.h"
#include "runtime/decode/runner.h"
#include "runtime/decode/tp_reasons.h"
#include "support/log.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {
namespace {

using kernels::k3::K1Build;
using kernels::k3::K2Build;

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

DevicePtr weight(const Backbone& backbone, int layer, std::string_view name) {
  // weight_reasons has checked that every weight a kernel reads is present.
  return backbone.weights.at(layer).find(name)->second.data;
}

// The weights K1 and K2 read, by the parameter names of model::plan_rank.
void bind_weights(const Backbone& b, LayerKernel& k) {
  const int l = k.layer;
  if (k.kind == model::ServedKind::kWhole) {
    k.k1.ares_norm = weight(b, l, "self_attention_res_norm.weight");
    k.k1.ares_proj = weight(b, l, "self_attention_res_proj.weight");
    k.k1.in_norm = weight(b, l, "input_layernorm.weight");
    k.k1.w_in = weight(b, l, "self_attn.in_proj_qkvgfab.weight");
    k.k1.w_fb = weight(b, l, "self_attn.f_b_proj.weight");
    k.k1.conv_w = weight(b, l, "self_attn.conv1d.weight");
    k.k1.a_log = weight(b, l, "self_attn.A_log");
    k.k1.dt_bias = weight(b, l, "self_attn.dt_bias");
    k.k1.o_norm = weight(b, l, "self_attn.o_norm.weight");
  }
  const std::string moe = "block_sparse_moe.";
  k.k2.w_o = weight(b, l, "self_attn.o_proj.weight");
  k.k2.mlp_res_norm = weight(b, l, "mlp_res_norm.weight");
  k.k2.mlp_res_proj = weight(b, l, "mlp_res_proj.weight");
  k.k2.post_norm = weight(b, l, "post_attention_layernorm.weight");
  k.k2.w_gate = weight(b, l, moe + "gate.weight");
  k.k2.gate_bias = weight(b, l, moe + "gate.e_score_correction_bias");
  k.k2.w_ld = weight(b, l, moe + "routed_expert_down_proj.weight");
  k.k2.w_gu = weight(b, l, moe + "shared_experts.gate_up_proj.weight");
  k.k2.w_sd = weight(b, l, moe + "shared_experts.down_proj.weight");
  k.k2.w13 = weight(b, l, moe + "experts.w13_weight");
  k.k2.w13_scale = weight(b, l, moe + "experts.w13_weight_scale");
  k.k2.w2 = weight(b, l, moe + "experts.w2_weight");
  k.k2.w2_scale = weight(b, l, moe + "experts.w2_weight_scale");
  if (b.config->latent_moe_use_norm) k.k2.latent_norm = weight(b, l, moe + "routed_expert_norm.weight");
  k.k2.w_up = weight(b, l, moe + "routed_expert_up_proj.weight");
}

// The options that change a build: the waits' bound, dependent launch, the test fault.
void apply(const ExecutorOptions& options, K1Build& build) {
  if (options.wait_ns > 0) build.wait_ns = options.wait_ns;
  build.dependent_launch = options.dependent_launch;
  if (options.k1_linear) build = k1_linear_choice(build);
}
void apply(const ExecutorOptions& options, K2Build& build) {
  if (options.wait_ns > 0) build.wait_ns = options.wait_ns;
  build.dependent_launch = options.dependent_launch;
  if (options.fault_ns > 0) {
    build.fault_epoch = options.fault_epoch;
    build.fault_layer = 128 + options.fault_layer;  // K2's tag slot
    build.fault_ns = options.fault_ns;
  }
}

// The programs each build runs with on `device` (or `wanted`, when not 0, and at least every K1
// build's rows); the shared health words cover the most.
int programs_for(const Device& device, const std::vector<K1Build>& k1s, const std::vector<K2Build>& k2s,
                 int wanted) {
  int programs = 1;
  if (wanted > 0) {
    programs = wanted;
    for (const K1Build& b : k1s) programs = std::max(programs, b.tokens);
    return programs;
  }
  for (const K1Build& b : k1s) programs = std::max(programs, k1_programs(device.info(), b));
  for (const K2Build& b : k2s) programs = std::max(programs, k2_programs(device.info(), b));
  return programs;
}

}  // namespace

SpecializedDecode::SpecializedDecode() = default;
SpecializedDecode::~SpecializedDecode() = default;

absl::StatusOr<std::unique_ptr<SpecializedDecode>> SpecializedDecode::create(const Backbone& backbone,
                                                                             DecodeConfig config, Group& group,
                                                                             Device& device, jit::Jit& jit,
                                                                             ExecutorOptions options) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> reasons = tp_reasons(backbone, group, options.other_ranks_stood_in);
  for (std::string& reason : weight_reasons(backbone)) reasons.push_back(std::move(reason));
  MT_RETURN_IF_ERROR(agree(reasons, group, "this deployment"));
  // Every rank reaches this point (the verdict was agreed), so the peer buffer's collective is made
  // before any of this rank's own work can fail.
  std::unique_ptr<PeerBuffer> peers;
  if (group.size() > 1 && !options.other_ranks_stood_in) {
    const model::ModelConfig& model = *backbone.config;
    const kernels::k3::PeerExchangeLayout layout =
        kernels::k3::peer_exchange_layout(group.size(), model.hidden_size, model.routed_expert_hidden_size);
    MT_ASSIGN_OR_RETURN(peers, PeerBuffer::create(device, group, static_cast<size_t>(layout.bytes())));
  }
  const double check_seconds = seconds_since(start);
  // Past the weights, each rank builds, allocates and loads on its own: the outcome is agreed
  // before returning, so that no rank goes on to prepare_kv's collective while another has failed.
  absl::StatusOr<std::unique_ptr<SpecializedDecode>> made =
      construct(backbone, config, group, device, jit, std::move(options), start, check_seconds, std::move(peers));
  MT_RETURN_IF_ERROR(agree_outcome(made.status(), group, "constructing the specialized decode"));
  return made;
}

absl::StatusOr<std::unique_ptr<SpecializedDecode>> SpecializedDecode::construct(
    const Backbone& backbone, DecodeConfig config, Group& group, Device& device, jit::Jit& jit,
    ExecutorOptions options, std::chrono::steady_clock::time_point start, double check_seconds,
    std::unique_ptr<PeerBuffer> peers) {
  const model::ModelConfig& model = *backbone.config;
  MT_ASSIGN_OR_RETURN(model::RankDims dims, model::rank_dims(model, backbone.tp, backbone.rank));
  if (!options.log) {
    options.log = [](const std::string& line) { log_info(line); };
  }

  std::unique_ptr<SpecializedDecode> decode(new SpecializedDecode());
  decode->layers_prefix_ = std::string(layers_prefix(backbone));
  decode->runner_ = std::make_unique<Runner>(device, jit, group, config, model, dims, options);
  Runner& runner = *decode->runner_;
  const bool exchanging = peers != nullptr;
  runner.set_peer_buffer(std::move(peers));
  ExecutorStats& stats = decode->stats_;
  stats.widths = config.widths();
  stats.check_seconds = check_seconds;

  MT_ASSIGN_OR_RETURN(std::vector<LayerBuilds> builds,
                      executor_builds(model, dims, backbone.start_layer, backbone.end_layer, config,
                                      device.info().target));
  if (exchanging) builds = exchanging_builds(std::move(builds), group.size(), group.rank());
  std::vector<K1Build> k1s;
  std::vector<K2Build> k2s;
  std::vector<int> served;
  std::string kda_prefix;
  int64_t core_width = 0;
  for (const LayerBuilds& l : builds) {
    LayerKernel& k = runner.layers[l.layer];
    k.layer = l.layer;
    k.kind = l.kind;
    k.first = served.empty();
    k.attn_name = decode->attention_name(l.layer);
    served.push_back(l.layer);
    bind_weights(backbone, k);
    const bool whole = l.kind == model::ServedKind::kWhole;
    if (whole && kda_prefix.empty()) kda_prefix = k.attn_name;
    ++(whole ? stats.whole_layers : stats.ffn_layers);
    core_width = std::max<int64_t>(core_width, l.core_width);
    for (auto [width, build] : l.k2) {
      apply(options, build);
      k.k2_builds[width] = build;
      k2s.push_back(build);
    }
    for (auto [width, build] : l.k1) {
      apply(options, build);
      k.k1_builds[{width, default_state_len(config)}] = build;
      k1s.push_back(build);
      if (build.linear_in_proj && !absl::c_linear_search(stats.k1_linear_widths, width)) {
        stats.k1_linear_widths.push_back(width);
      }
    }
  }
  stats.layers = static_cast<int>(served.size());
  runner.by_layer.assign(static_cast<size_t>(model.num_hidden_layers), nullptr);
  for (const auto& [layer, k] : runner.layers) runner.by_layer[static_cast<size_t>(layer)] = &k;
  MT_RETURN_IF_ERROR(runner.allocate(programs_for(device, k1s, k2s, options.programs), core_width));
  MT_RETURN_IF_ERROR(runner.load(k1s, k2s, stats));
  runner.resolve();
  runner.planner = std::make_unique<StepPlanner>(config, model, dims, served, kda_prefix);
  stats.seconds = seconds_since(start);
  const bool interpreted = device.info().vendor == dsl::Vendor::kCpu;
  const bool stood_in = options.other_ranks_stood_in && backbone.tp > 1;
  runner.options().log(absl::StrCat(
      "specialized decode: ", stats.layers, " layers (", stats.whole_layers, " KDA, ", stats.ffn_layers,
      " MLA FFN) at widths ", absl::StrJoin(stats.widths, ","), ": ", stats.builds, " builds ",
      interpreted ? "(programs for the CPU interpreter)"
                  : absl::StrCat("(", stats.compiled, " compiled, ", stats.builds - stats.compiled, " from the cache, ",
                                 stats.lowered, " lowered)"),
      " in ", absl::StrFormat("%.2f s (weights %.2f, finding %.2f, loading %.2f)", stats.seconds,
                              stats.check_seconds, stats.find_seconds, stats.load_seconds),
      stats.k1_linear_widths.empty()
          ? ""
          : absl::StrCat("; K1's linear in_proj at widths ", absl::StrJoin(stats.k1_linear_widths, ",")),
      stood_in ? absl::StrCat("; ", other_ranks_stood_in_note(backbone.tp, backbone.rank)) : "",
      exchanging ? absl::StrCat("; TP ", group.size(), " rank ", group.rank(),
                                ": K2 exchanges partial sums over the group's peer buffers")
                 : ""));
  return decode;
}

absl::Status SpecializedDecode::prepare_kv(const std::vector<KdaCache>& caches, Stream& stream) {
  Runner& runner = *runner_;
  for (auto& [layer, k] : runner.layers) k.state_len = 0;
  // Every served KDA layer needs its pair. A rank missing one refuses with its peers (the planner
  // agrees on it with the caches' reasons), so that none is left in a collective the others
  // skipped; the previous binding is forgotten first, as the seed's prepare_kv does.
  const bool bound = !caches.empty() && caches.front().recurrent.elements() > 0;
  std::vector<std::string> missing;
  for (const auto& [layer, k] : runner.layers) {
    if (!bound || k.kind != model::ServedKind::kWhole) continue;
    if (std::none_of(caches.begin(), caches.end(), [&](const KdaCache& c) { return c.layer == k.attn_name; })) {
      missing.push_back(absl::StrCat("prepare_kv: no cache for KDA layer \"", k.attn_name,
                                     "\"; expected one (conv, recurrent) pair per served KDA layer, got ",
                                     caches.size(), " pairs"));
    }
  }
  MT_RETURN_IF_ERROR(runner.planner->prepare_kv(caches, runner.group(), std::move(missing)));
  if (!runner.planner->kv_bound()) return absl::OkStatus();
  // The builds and loads below are this rank's own work: their outcome is agreed before returning.
  absl::Status built = bind_kv(caches, stream);
  if (absl::Status agreed = agree_outcome(built, runner.group(), "prepare_kv"); !agreed.ok()) {
    runner.planner->unbind();
    return agreed;
  }
  return absl::OkStatus();
}

absl::Status SpecializedDecode::bind_kv(const std::vector<KdaCache>& caches, Stream& stream) {
  Runner& runner = *runner_;

  const int64_t channels = 3 * runner.dims().kda_projection;
  std::vector<K1Build> needed;
  for (auto& [layer, k] : runner.layers) {
    if (k.kind != model::ServedKind::kWhole) continue;
    const KdaCache& cache =
        *std::find_if(caches.begin(), caches.end(), [&](const KdaCache& c) { return c.layer == k.attn_name; });
    // cache_reasons has checked the shapes: channels last [slots, SL, 3 Pl] or dim first.
    const TensorView& conv = cache.conv;
    const bool channels_last = conv.shape[2] == channels;
    k.k1.conv_state = conv.data;
    k.k1.conv_slot_stride = conv.strides[0];
    k.k1.conv_entry_stride = channels_last ? conv.strides[1] : conv.strides[2];
    k.k1.conv_channel_stride = channels_last ? conv.strides[2] : conv.strides[1];
    k.k1.state = cache.recurrent.data;
    k.k1.state_slot_stride = cache.recurrent.strides[0];
    k.state_len = static_cast<int>(channels_last ? conv.shape[1] : conv.shape[2]);
    for (int width : runner.config().widths()) {
      if (k.k1_builds.contains({width, k.state_len})) continue;
      absl::StatusOr<K1Build> build = layer_k1_build(runner.model(), runner.dims(), layer, width, runner.config().q,
                                                     k.state_len, runner.device().info().target);
      if (!build.ok()) return build.status();
      apply(runner.options(), *build);
      k.k1_builds[{width, k.state_len}] = *build;
      needed.push_back(*build);
    }
  }
  if (needed.empty()) return absl::OkStatus();
  const int before = stats_.compiled, builds = stats_.builds;
  MT_RETURN_IF_ERROR(runner.load(needed, {}, stats_, &stream));
  runner.resolve();
  runner.options().log(absl::StrCat("specialized decode: the bound KV caches need ", stats_.builds - builds,
                                    " more builds (", stats_.compiled - before, " compiled)"));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Step>> SpecializedDecode::plan(const StepInputs& step) const {
  MT_ASSIGN_OR_RETURN(std::optional<PlannedStep> planned, runner_->planner->plan(step));
  if (!planned) return std::nullopt;
  // Every KDA layer launches with the routing layer's metadata: vLLM builds one GDN metadata for
  // all of them (the seed looks each layer up by name and finds the same object), and one lookup
  // a step keeps Step::layer at a few nanoseconds.
  return Step(*planned, runner_.get(), &planned->attn_metadata->find(runner_->planner->kda_prefix())->second);
}

std::optional<LayerLaunch> Step::layer(int layer) const {
  if (layer < 0 || static_cast<size_t>(layer) >= runner_->by_layer.size()) return std::nullopt;
  const LayerKernel* kernel = runner_->by_layer[static_cast<size_t>(layer)];
  if (kernel == nullptr) return std::nullopt;
  return LayerLaunch(runner_, kernel, meta_, plan_.width);
}

absl::Status LayerLaunch::operator()(LayerIo& io, Stream& stream) const {
  return kernel_->launch(*runner_, *meta_, width_, io, stream);
}

absl::Status SpecializedDecode::after_step(Stream& stream, bool capturing) {
  return runner_->fail_stop().after_step(stream, capturing);
}

absl::Status SpecializedDecode::check_health() const {
  // K1 and K2 share the health words; a record's expected tag says whose wait it was: slot + 1 in
  // its low byte, K1's slot the layer, K2's 128 + the layer.
  auto region = [](int32_t region) -> std::string {
    switch (region) {
      case 1: return "AttnRes";
      case 2: return "K1 x rows";
      case 3: return "K1 in_proj";
      case 4: return "K2 delta";
      case 5: return "K2 router input";
      case 6: return "K2 router logits";
      case 7: return "K2 MoE";
      case 8: return "K2 latent sum";
      case 9: return "K2 o_proj's partial sums";
      case 10: return "K2 routed latent's partial sums";
      case 11: return "K2 MoE output's partial sums";
      default: return "";
    }
  };
  const int64_t wait_ns = runner_->options().wait_ns > 0 ? runner_->options().wait_ns : kernels::k3::K1Build{}.wait_ns;
  return runner_->state().check_health("a layer kernel", wait_ns, region, [](int32_t region) {
    return region >= static_cast<int32_t>(kernels::k3::K2Region::kOProjPeers);
  });
}

absl::StatusOr<int32_t> SpecializedDecode::device_epoch() const { return runner_->state().read_epoch(); }

const DecodeConfig& SpecializedDecode::config() const { return runner_->config(); }
const std::string& SpecializedDecode::kda_prefix() const { return runner_->planner->kda_prefix(); }
std::string SpecializedDecode::attention_name(int layer) const {
  return decode::attention_name(layers_prefix_, layer);
}

}  // namespace monotile::runtime::decode
