// The stand-ins' cases against the float64 reference; see standins_test_support.h.
#include "kernels/standins/standins_test_support.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "kernels/reference/k3_layer_reference.h"
#include "kernels/reference/mla_attention.h"
#include "kernels/standins/kda_mlp_standin.h"
#include "kernels/standins/mla_standin.h"
#include "model/config.h"
#include "model/dtype.h"
#include "model/seeded_weights.h"
#include "model/shard_plan.h"
#include "support/status_macros.h"

namespace monotile::kernels::standins {
namespace {

namespace ref = kernels::reference;
using kernels::k3::check_output;
using kernels::k3::rule_for;
using runtime::DeviceBuffer;

constexpr uint16_t kBf16Nan = 0x7fc0;

// One case's device: its buffers live as long as it.
class Workspace {
 public:
  explicit Workspace(runtime::Device& device) : device_(device) {}

  absl::StatusOr<runtime::DevicePtr> upload(const void* data, size_t bytes) {
    MT_ASSIGN_OR_RETURN(DeviceBuffer buffer, device_.allocate(std::max<size_t>(bytes, 4)));
    MT_RETURN_IF_ERROR(device_.copy_to_device(buffer.address(), data, bytes));
    buffers_.push_back(std::move(buffer));
    return buffers_.back().address();
  }
  absl::StatusOr<runtime::DevicePtr> upload_bf16(const std::vector<double>& values) {
    std::vector<uint16_t> bits(values.size());
    for (size_t i = 0; i < values.size(); ++i) bits[i] = model::bf16_from_double(values[i]);
    return upload(bits.data(), bits.size() * 2);
  }
  absl::StatusOr<runtime::DevicePtr> poisoned_bf16(size_t count) {
    std::vector<uint16_t> bits(count, kBf16Nan);
    return upload(bits.data(), bits.size() * 2);
  }
  absl::StatusOr<std::vector<double>> read_bf16(runtime::DevicePtr address, size_t count) {
    std::vector<uint16_t> bits(count);
    MT_RETURN_IF_ERROR(device_.copy_to_host(bits.data(), address, count * 2));
    std::vector<double> values(count);
    for (size_t i = 0; i < count; ++i) values[i] = model::bf16_to_float(bits[i]);
    return values;
  }
  absl::StatusOr<std::vector<double>> read_f32(runtime::DevicePtr address, size_t count) {
    std::vector<float> floats(count);
    MT_RETURN_IF_ERROR(device_.copy_to_host(floats.data(), address, count * 4));
    return std::vector<double>(floats.begin(), floats.end());
  }

 private:
  runtime::Device& device_;
  std::vector<DeviceBuffer> buffers_;
};

// Random bf16 values: normal, scaled.
std::vector<double> random_bf16(size_t count, double scale, std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<double> values(count);
  for (double& v : values) v = model::round_to_bf16(normal(rng));
  return values;
}

// One layer of one rank: its weights as the reference reads them, and on the device.
struct LayerSetup {
  model::ModelConfig config;
  model::RankDims dims;
  ref::RankLayerWeights weights;
  WeightAddresses addresses;
};

absl::StatusOr<LayerSetup> set_up_layer(const StandinCase& c, Workspace& space, std::mt19937& rng) {
  LayerSetup s;
  MT_ASSIGN_OR_RETURN(s.config, model::load_config(c.model));
  MT_ASSIGN_OR_RETURN(s.dims, model::rank_dims(s.config, c.tp, c.rank));
  MT_ASSIGN_OR_RETURN(model::RankPlan plan, model::plan_rank(s.config, c.tp, c.rank));
  MT_ASSIGN_OR_RETURN(std::unique_ptr<model::SeededWeights> source,
                      model::SeededWeights::create(s.config, rng()));
  // The layer's tensors but the MoE's (no stand-in reads them).
  model::LayerPlan layer = plan.layers.at(static_cast<size_t>(c.layer));
  std::erase_if(layer.tensors,
                [](const model::RankTensor& t) { return t.name.starts_with("block_sparse_moe."); });
  MT_ASSIGN_OR_RETURN(s.weights, ref::load_rank_layer(layer, s.dims, *source));
  for (const model::RankTensor& tensor : layer.tensors) {
    if (tensor.dtype == model::Dtype::kU8) continue;
    MT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, model::load_rank_tensor(tensor, *source));
    MT_ASSIGN_OR_RETURN(s.addresses[tensor.name], space.upload(bytes.data(), bytes.size()));
  }
  return s;
}

}  // namespace

std::string case_name(const StandinCase& c) {
  return absl::StrCat(c.model, "_tp", c.tp, "r", c.rank, "_layer", c.layer, "_n", c.requests, "_q",
                      c.q, c.padded ? absl::StrCat("_pad", c.padded) : "");
}

bool StandinResult::ok() const {
  return std::all_of(outputs.begin(), outputs.end(),
                     [](const kernels::k3::OutputCheck& o) { return o.passed(); });
}

std::string StandinResult::report() const {
  std::ostringstream out;
  for (const kernels::k3::OutputCheck& o : outputs) {
    out << "  " << o.name << ": " << o.compared << " values, worst " << o.worst_ulps << " ulps, "
        << o.worst_rms << " of RMS, " << o.outliers << " outliers, " << o.failures << " failures";
    if (!o.passed()) out << "; first: " << o.first_failure;
    out << "\n";
  }
  return out.str();
}

absl::StatusOr<StandinResult> run_kda_mlp_case(const StandinCase& c, runtime::Device& device,
                                               jit::Jit& jit, std::mt19937& rng) {
  Workspace space(device);
  MT_ASSIGN_OR_RETURN(LayerSetup s, set_up_layer(c, space, rng));
  const model::ModelConfig& config = s.config;
  const int tokens = c.requests * c.q, state_len = c.q + 2;
  const int64_t h = config.hidden_size, blocks = config.block_count(),
                channels = 3 * s.dims.kda_projection;
  const int64_t slots = 2 * tokens + 1;
  const int64_t state_size = int64_t{s.dims.kda_heads} * 128 * 128;

  ref::LayerInput in;
  in.prefix = random_bf16(static_cast<size_t>(tokens * h), 1.0, rng);
  in.blocks = random_bf16(static_cast<size_t>(tokens * blocks * h), 1.0, rng);
  in.meta.requests = c.requests;
  in.meta.q = c.q;
  std::vector<int32_t> pool(static_cast<size_t>(slots - 1));
  std::iota(pool.begin(), pool.end(), 1);
  std::shuffle(pool.begin(), pool.end(), rng);
  for (int n = 0; n < c.requests; ++n) {
    const bool pad = n >= c.requests - c.padded;
    for (int j = 0; j < c.q; ++j)
      in.meta.state_indices.push_back(pad ? -1 : pool[static_cast<size_t>(n * c.q + j)]);
    in.meta.num_accepted.push_back(pad ? 1 : std::uniform_int_distribution<int>(1, c.q)(rng));
  }
  ref::KdaCache cache;
  cache.slots = slots;
  cache.state_len = state_len;
  cache.conv = random_bf16(static_cast<size_t>(slots * state_len * channels), 1.0, rng);
  std::normal_distribution<double> normal(0.0, 0.01);
  cache.state.resize(static_cast<size_t>(slots * state_size));
  for (double& v : cache.state) v = static_cast<float>(normal(rng));
  in.caches.push_back(cache);

  KdaMlpTensors t;
  MT_ASSIGN_OR_RETURN(t.prefix, space.upload_bf16(in.prefix));
  MT_ASSIGN_OR_RETURN(t.blocks, space.upload_bf16(in.blocks));
  t.blocks_token_stride = blocks * h;
  t.blocks_block_stride = h;
  MT_ASSIGN_OR_RETURN(t.conv_state, space.upload_bf16(cache.conv));
  std::vector<float> state(cache.state.begin(), cache.state.end());
  MT_ASSIGN_OR_RETURN(t.state, space.upload(state.data(), state.size() * 4));
  MT_ASSIGN_OR_RETURN(t.state_indices,
                      space.upload(in.meta.state_indices.data(), in.meta.state_indices.size() * 4));
  MT_ASSIGN_OR_RETURN(t.num_accepted,
                      space.upload(in.meta.num_accepted.data(), in.meta.num_accepted.size() * 4));
  MT_ASSIGN_OR_RETURN(t.out, space.poisoned_bf16(static_cast<size_t>(tokens * h)));

  MT_ASSIGN_OR_RETURN(std::unique_ptr<KdaMlpStandin> standin,
                      KdaMlpStandin::create(device, jit, config, s.dims, c.layer, s.addresses,
                                            tokens, c.q, state_len, false));
  MT_ASSIGN_OR_RETURN(runtime::Stream stream, device.create_stream());
  MT_RETURN_IF_ERROR(standin->launch(t, stream));
  MT_RETURN_IF_ERROR(device.synchronize(stream));
  MT_RETURN_IF_ERROR(standin->check_health());

  MT_ASSIGN_OR_RETURN(
      ref::LayerOutput want,
      ref::layer_reference(config, c.layer, std::span(&s.weights, 1), in, ref::Rounding::kBf16));
  StandinResult result;
  const int64_t rows = tokens;
  MT_ASSIGN_OR_RETURN(std::vector<double> prefix, space.read_bf16(t.prefix, in.prefix.size()));
  kernels::k3::CheckRule prefix_rule = rule_for("prefix'");
  if (config.is_block_write_layer(c.layer)) prefix_rule = rule_for("core");
  prefix_rule.abs_share = std::max(prefix_rule.abs_share, rule_for("core").abs_share);
  result.outputs.push_back(check_output("prefix'", prefix, want.prefix, {rows, h}, prefix_rule));
  MT_ASSIGN_OR_RETURN(std::vector<double> got_blocks, space.read_bf16(t.blocks, in.blocks.size()));
  result.outputs.push_back(
      check_output("blocks", got_blocks, want.blocks, {rows, blocks, h}, rule_for("blocks")));
  MT_ASSIGN_OR_RETURN(std::vector<double> conv, space.read_bf16(t.conv_state, cache.conv.size()));
  result.outputs.push_back(check_output("conv_state", conv, want.caches[0].conv,
                                        {slots, state_len, channels}, rule_for("conv_state")));
  MT_ASSIGN_OR_RETURN(std::vector<double> got_state, space.read_f32(t.state, cache.state.size()));
  result.outputs.push_back(check_output("recurrent_state", got_state, want.caches[0].state,
                                        {static_cast<int64_t>(cache.state.size())},
                                        rule_for("recurrent_state")));
  MT_ASSIGN_OR_RETURN(std::vector<double> out,
                      space.read_bf16(t.out, static_cast<size_t>(tokens * h)));
  result.outputs.push_back(check_output("out", out, want.mlp_output, {rows, h}, rule_for("out")));
  return result;
}

absl::StatusOr<StandinResult> run_mla_case(const StandinCase& c, runtime::Device& device,
                                           jit::Jit& jit, std::mt19937& rng) {
  Workspace space(device);
  MT_ASSIGN_OR_RETURN(LayerSetup s, set_up_layer(c, space, rng));
  const model::ModelConfig& config = s.config;
  const int tokens = c.requests * c.q;
  const int64_t h = config.hidden_size, blocks = config.block_count(),
                nb = config.previous_blocks(c.layer);
  const int64_t capacity = 24, cache_slots = c.requests + 2;

  std::vector<double> prefix = random_bf16(static_cast<size_t>(tokens * h), 1.0, rng);
  const std::vector<double> delta = random_bf16(static_cast<size_t>(tokens * h), 1.0, rng);
  const std::vector<double> block_values =
      random_bf16(static_cast<size_t>(tokens * blocks * h), 1.0, rng);
  ref::MlaStep step{.q = c.q, .slots = {}, .context = {}};
  std::vector<int32_t> pool(static_cast<size_t>(cache_slots));
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), rng);
  std::vector<int32_t> context;
  for (int n = 0; n < c.requests; ++n) {
    const bool pad = n >= c.requests - c.padded;
    step.slots.push_back(pad ? -1 : pool[static_cast<size_t>(n)]);
    const int64_t length = std::uniform_int_distribution<int64_t>(0, capacity - c.q)(rng);
    step.context.push_back(length);
    context.push_back(static_cast<int32_t>(length));
  }
  ref::MlaCache cache = ref::make_mla_cache(config, cache_slots, capacity);
  cache.entries = random_bf16(cache.entries.size(), 1.0, rng);

  MlaTensors t;
  MT_ASSIGN_OR_RETURN(t.prefix, space.upload_bf16(prefix));
  MT_ASSIGN_OR_RETURN(t.delta, space.upload_bf16(delta));
  MT_ASSIGN_OR_RETURN(t.blocks, space.upload_bf16(block_values));
  t.blocks_token_stride = blocks * h;
  t.blocks_block_stride = h;
  MT_ASSIGN_OR_RETURN(t.slots, space.upload(step.slots.data(), step.slots.size() * 4));
  MT_ASSIGN_OR_RETURN(t.context, space.upload(context.data(), context.size() * 4));
  MT_ASSIGN_OR_RETURN(t.cache, space.upload_bf16(cache.entries));
  t.cache_capacity = capacity;
  const int64_t core_width = int64_t{s.dims.mla_heads} * config.v_head_dim;
  MT_ASSIGN_OR_RETURN(t.core, space.poisoned_bf16(static_cast<size_t>(tokens * core_width)));

  MT_ASSIGN_OR_RETURN(
      std::unique_ptr<MlaStandin> standin,
      MlaStandin::create(device, jit, config, s.dims, c.layer, s.addresses, tokens, c.q));
  MT_RETURN_IF_ERROR(device.fill_bytes(standin->x(), 0xff, static_cast<size_t>(tokens * h) * 2));
  MT_ASSIGN_OR_RETURN(runtime::Stream stream, device.create_stream());
  MT_RETURN_IF_ERROR(standin->launch(t, stream));
  MT_RETURN_IF_ERROR(device.synchronize(stream));

  // The reference: the fold, the AttnRes, the attention over a copy of the cache.
  for (size_t i = 0; i < prefix.size(); ++i) prefix[i] = model::round_to_bf16(prefix[i] + delta[i]);
  std::vector<double> x(static_cast<size_t>(tokens * h));
  for (int64_t row = 0; row < tokens; ++row) {
    std::vector<std::span<const double>> sources;
    for (int64_t b = 0; b < nb; ++b)
      sources.push_back(std::span(block_values).subspan((row * blocks + b) * h, h));
    sources.push_back(std::span(prefix).subspan(row * h, h));
    std::vector<double> mixed = ref::attn_res_row(
        sources, s.weights.at("self_attention_res_norm.weight"),
        s.weights.at("self_attention_res_proj.weight"), s.weights.at("input_layernorm.weight"),
        config.rms_norm_eps, ref::Rounding::kBf16);
    std::copy(mixed.begin(), mixed.end(), x.begin() + row * h);
  }
  MT_ASSIGN_OR_RETURN(std::vector<double> core,
                      ref::mla_attention_reference(config, c.layer, s.weights, x, step, cache,
                                                   ref::Rounding::kBf16));

  StandinResult result;
  MT_ASSIGN_OR_RETURN(std::vector<double> got_prefix, space.read_bf16(t.prefix, prefix.size()));
  result.outputs.push_back(
      check_output("prefix", got_prefix, prefix, {tokens, h}, rule_for("prefix")));
  MT_ASSIGN_OR_RETURN(std::vector<double> got_x, space.read_bf16(standin->x(), x.size()));
  result.outputs.push_back(check_output("x", got_x, x, {tokens, h}, rule_for("x")));
  MT_ASSIGN_OR_RETURN(std::vector<double> got_cache,
                      space.read_bf16(t.cache, cache.entries.size()));
  result.outputs.push_back(check_output("mla_cache", got_cache, cache.entries,
                                        {cache_slots, capacity, standin->shape().entry()},
                                        rule_for("x")));
  MT_ASSIGN_OR_RETURN(std::vector<double> got_core, space.read_bf16(t.core, core.size()));
  result.outputs.push_back(
      check_output("core", got_core, core, {tokens, core_width}, rule_for("core")));
  return result;
}

}  // namespace monotile::kernels::standins
