// `monotile decode`: the executor over a whole model, fed spec-verify steps as vLLM would feed them.
// It builds SpecializedDecode over the rank's weights, binds the KV caches, then runs S steps of
// random requests (random accepted counts, slots drawn from a pool with gaps, some requests
// padded) and one prefill-like step that plan must refuse. Per step it prints plan's decision; at
// the end a per-layer time table, kernel layers beside the host's (stand-ins: decode_host_layers.h, the
// float64 reference on the CPU device, simple DSL kernels on a GPU); with --check, each served layer's
// worst error against the float64 reference of that layer.
#include <chrono>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jit/jit.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/dtype.h"
#include "model/seeded_weights.h"
#include "model/shard_plan.h"
#include "runtime/decode/decode.h"
#include "runtime/decode/device_weights.h"
#include "runtime/decode/layer_check.h"
#include "runtime/decode/specialized_decode.h"
#include "runtime/discovery.h"
#include "support/status_macros.h"
#include "tools/build_report.h"
#include "tools/command_flags.h"
#include "tools/commands.h"
#include "tools/decode_host_layers.h"
#include "tools/device_choice.h"
#include "tools/shared_flags.h"

ABSL_FLAG(std::optional<std::string>, standins, std::nullopt, "how the host's layers run: reference or kernels");
ABSL_FLAG(int, steps, 3, "spec-verify steps");

namespace monotile::tools {
namespace {

namespace dec = runtime::decode;
namespace ref = kernels::reference;

constexpr const char* kUsage =
    "usage: monotile decode [--model k3-tiny|k3|DIR] [--seed S] [--device cpu|gpu] [--q Q] [--requests N]\n"
    "                       [--steps S] [--max-rows 8|16] [--tp T --rank R] [--standins reference|kernels]\n"
    "                       [--check]\n"
    "  --model     an embedded config (seeded random weights) or a checkpoint folder (default k3-tiny)\n"
    "  --seed      the seeded weights' and the steps' seed (default 1)\n"
    "  --device    cpu (the CPU interpreter) or gpu (default: a GPU when there is one)\n"
    "  --q         tokens per request, num_speculative_tokens + 1 (default 2)\n"
    "  --requests  requests per step (default 2; width = requests x q <= max-rows)\n"
    "  --steps     spec-verify steps (default 3), then one prefill-like step\n"
    "  --max-rows  the executor's widest launch (default 16)\n"
    "  --tp, --rank  run rank R of TP T alone: the other ranks' contributions to each reduction are\n"
    "              zero (stood in), and --check holds the rank to the same reference\n"
    "  --standins  how the host's layers run: the float64 reference on the CPU, or DSL kernels on the\n"
    "              device (default: kernels on a GPU, the reference on the CPU device)\n"
    "  --check     compare every served layer with the float64 reference of that layer\n";

int misuse(const std::string& message) {
  std::fprintf(stderr, "monotile decode: %s\n%s", message.c_str(), kUsage);
  return 2;
}

int fail(const absl::Status& status) {
  std::fprintf(stderr, "monotile decode: %s\n", std::string(status.message()).c_str());
  return 1;
}

struct Options {
  std::string model = "k3-tiny";
  uint64_t seed = 1;
  std::optional<std::string> device;
  std::optional<std::string> standins;
  int q = 2, requests = 2, steps = 3, max_rows = 16, tp = 1, rank = 0;
  bool check = false;
};

// One layer's row of the table.
struct LayerRow {
  std::string kind;
  bool standin = false;  // a layer the host runs whole
  double seconds = 0;
  int runs = 0;
  double worst_rms = 0;
  bool checked = false, passed = true;
};

// The metadata of one step on the device, as vLLM's GDN builder gives it.
struct DeviceStep {
  HostStep host;
  runtime::DeviceBuffer indices, accepted, starts, mla_slots, mla_context;
  dec::AttnMetadata metadata;
};

class DecodeJob {
 public:
  explicit DecodeJob(Options o) : o_(std::move(o)), rng_(o_.seed) {}
  absl::Status run();

 private:
  absl::Status setup();
  absl::StatusOr<DeviceStep> make_step(int step, int padded, bool prefill);
  absl::Status run_step(int step, DeviceStep& s);

  Options o_;
  std::mt19937 rng_;
  model::ModelConfig config_;
  model::RankDims dims_;
  model::RankPlan plan_;
  std::unique_ptr<model::TensorSource> source_;
  std::unique_ptr<runtime::Device> device_;
  std::unique_ptr<dec::Group> group_;
  dec::DeviceWeights weights_;
  std::unique_ptr<dec::SpecializedDecode> decode_;
  std::unique_ptr<HostLayers> host_;
  std::map<int, DeviceKdaCache> caches_;
  std::vector<int64_t> mla_context_;
  std::map<int, LayerRow> rows_;
  int64_t slots_ = 0;
  int first_kda_ = -1;  // the first served KDA layer: plan's routing source
  bool checks_passed_ = true;
};

absl::Status DecodeJob::setup() {
  MT_ASSIGN_OR_RETURN(config_, model::load_config(o_.model));
  if (!model::embedded_config_json(o_.model).empty()) {
    MT_ASSIGN_OR_RETURN(std::unique_ptr<model::SeededWeights> seeded, model::SeededWeights::create(config_, o_.seed));
    source_ = std::move(seeded);
  } else {
    MT_ASSIGN_OR_RETURN(std::unique_ptr<model::Checkpoint> checkpoint, model::Checkpoint::open(o_.model));
    source_ = std::move(checkpoint);
  }
  MT_ASSIGN_OR_RETURN(device_, pick_device(o_.device));
  const runtime::DeviceInfo& info = device_->info();
  dec::DecodeOptions deployment{.decode_backend = std::string(dec::kSpecializedBackend),
                                .tensor_parallel_size = o_.tp,
                                .num_speculative_tokens = o_.q - 1,
                                .max_rows = o_.max_rows,
                                .model = &config_,
                                .device = dec::device_facts(info)};
  MT_ASSIGN_OR_RETURN(std::optional<dec::DecodeConfig> config, dec::specialized_decode_config(deployment));
  if (o_.requests * o_.q > config->max_rows) {
    return absl::InvalidArgumentError(absl::StrCat("--requests ", o_.requests, " x --q ", o_.q, " = ",
                                                   o_.requests * o_.q, " rows, expected at most --max-rows ",
                                                   config->max_rows, "; hint: fewer requests or a smaller q"));
  }
  MT_ASSIGN_OR_RETURN(dims_, model::rank_dims(config_, o_.tp, o_.rank));
  MT_ASSIGN_OR_RETURN(plan_, model::plan_rank(config_, o_.tp, o_.rank));
  // One rank's whole model must fit: k3 (about 1 TB) does not, even split eight ways.
  const uint64_t bytes = plan_.bytes_read();
  const uint64_t room = info.vendor == dsl::Vendor::kCpu ? uint64_t{16} << 30 : static_cast<uint64_t>(info.memory_bytes) / 10 * 9;
  if (bytes > room) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "rank %d of TP %d of %s reads %.1f GB of weights; the %s has room for %.1f GB; hint: --model k3-tiny, "
        "or `monotile layer run` for one layer of a large model",
        o_.rank, o_.tp, o_.model, bytes / 1e9, runtime::describe(info), room / 1e9));
  }
  std::printf("monotile decode: %s, TP %d rank %d%s, q %d, %d requests a step, on %s\n", o_.model.c_str(), o_.tp,
              o_.rank, o_.tp > 1 ? " alone (the other ranks' partial sums stood in by zero)" : "", o_.q, o_.requests,
              runtime::describe(info).c_str());
  MT_ASSIGN_OR_RETURN(weights_, dec::upload_rank_weights(*device_, config_, o_.tp, o_.rank, 0,
                                                         config_.num_hidden_layers, *source_));
  group_ = dec::make_single_process_group();
  MT_ASSIGN_OR_RETURN(decode_, dec::SpecializedDecode::create(
                                   weights_.backbone, *config, *group_, *device_, jit::Jit::process_default(),
                                   {.on_progress = progress_printer(stderr),
                                    .log = [](const std::string& line) { std::printf("%s\n", line.c_str()); }}));

  // The KV caches: a slot pool twice the live positions, so each step's slots leave gaps.
  slots_ = int64_t{2} * config->max_rows + 1;
  const int64_t channels = 3 * dims_.kda_projection, state_len = config->q + 2;
  std::vector<dec::KdaCache> bound;
  std::normal_distribution<double> normal(0.0, 1.0);
  for (int layer = 0; layer < config_.num_hidden_layers; ++layer) {
    if (!config_.is_kda_layer(layer)) continue;
    DeviceKdaCache& c = caches_[layer];
    c.slots = slots_;
    c.state_len = state_len;
    c.channels = channels;
    c.state_elements = slots_ * dims_.kda_heads * 128 * 128;
    MT_ASSIGN_OR_RETURN(c.conv, device_->allocate(static_cast<size_t>(slots_ * state_len * channels) * 2));
    MT_ASSIGN_OR_RETURN(c.state, device_->allocate(static_cast<size_t>(c.state_elements) * 4));
    std::vector<uint16_t> conv(static_cast<size_t>(slots_ * state_len * channels));
    for (uint16_t& v : conv) v = model::bf16_from_double(normal(rng_));
    std::vector<float> state(static_cast<size_t>(c.state_elements));
    for (float& v : state) v = static_cast<float>(0.01 * normal(rng_));
    MT_RETURN_IF_ERROR(device_->copy_to_device(c.conv.address(), conv.data(), conv.size() * 2));
    MT_RETURN_IF_ERROR(device_->copy_to_device(c.state.address(), state.data(), state.size() * 4));
    if (config_.served_kind(layer) != model::ServedKind::kWhole) continue;
    if (first_kda_ < 0) first_kda_ = layer;
    bound.push_back({absl::StrCat("model.layers.", layer, ".self_attn"),
                     dec::TensorView::dense(model::Dtype::kBF16, {slots_, state_len, channels}, c.conv.address()),
                     dec::TensorView::dense(model::Dtype::kF32, {slots_, dims_.kda_heads, 128, 128},
                                            c.state.address())});
  }
  MT_RETURN_IF_ERROR(decode_->prepare_kv(bound));
  mla_context_.assign(static_cast<size_t>(o_.requests), 4);
  StandinKind standins = info.vendor == dsl::Vendor::kCpu ? StandinKind::kReference : StandinKind::kKernels;
  if (o_.standins) standins = *o_.standins == "kernels" ? StandinKind::kKernels : StandinKind::kReference;
  host_ = std::make_unique<HostLayers>(*device_, jit::Jit::process_default(), config_, dims_, plan_, *source_,
                                       weights_.backbone, standins, config->max_rows, o_.requests,
                                       4 + int64_t{o_.steps + 1} * o_.q);
  // The layers no kernel serves, run whole by the host (layer 0).
  std::vector<int> host_layers;
  for (int layer = 0; layer < config_.num_hidden_layers; ++layer) {
    if (config_.served_kind(layer) == model::ServedKind::kNone) host_layers.push_back(layer);
  }
  MT_RETURN_IF_ERROR(host_->prepare(host_layers, o_.requests * o_.q, o_.q, static_cast<int>(state_len)));
  return absl::OkStatus();
}

absl::StatusOr<DeviceStep> DecodeJob::make_step(int step, int padded, bool prefill) {
  DeviceStep s;
  const int n = o_.requests, q = o_.q;
  s.host.q = q;
  std::vector<int32_t> pool(static_cast<size_t>(slots_ - 1));
  std::iota(pool.begin(), pool.end(), 1);
  std::shuffle(pool.begin(), pool.end(), rng_);
  for (int r = 0; r < n; ++r) {
    const bool pad = r >= n - padded;
    for (int j = 0; j < q; ++j) s.host.state_indices.push_back(pad ? -1 : pool[static_cast<size_t>(r * q + j)]);
    s.host.num_accepted.push_back(pad ? 1 : std::uniform_int_distribution<int>(1, q)(rng_));
    s.host.mla_slots.push_back(pad ? -1 : r);
    s.host.mla_context.push_back(mla_context_[static_cast<size_t>(r)]);
  }
  std::vector<int32_t> starts(static_cast<size_t>(n + 1));
  for (int r = 0; r <= n; ++r) starts[static_cast<size_t>(r)] = r * q;
  MT_ASSIGN_OR_RETURN(s.indices, device_->allocate(s.host.state_indices.size() * 4));
  MT_ASSIGN_OR_RETURN(s.accepted, device_->allocate(s.host.num_accepted.size() * 4));
  MT_ASSIGN_OR_RETURN(s.starts, device_->allocate(starts.size() * 4));
  MT_RETURN_IF_ERROR(device_->copy_to_device(s.indices.address(), s.host.state_indices.data(), n * q * 4));
  MT_RETURN_IF_ERROR(device_->copy_to_device(s.accepted.address(), s.host.num_accepted.data(), n * 4));
  MT_RETURN_IF_ERROR(device_->copy_to_device(s.starts.address(), starts.data(), starts.size() * 4));
  // The MLA stand-ins' slots and context lengths, for the DSL kernels.
  std::vector<int32_t> context(s.host.mla_context.begin(), s.host.mla_context.end());
  MT_ASSIGN_OR_RETURN(s.mla_slots, device_->allocate(static_cast<size_t>(n) * 4));
  MT_ASSIGN_OR_RETURN(s.mla_context, device_->allocate(static_cast<size_t>(n) * 4));
  MT_RETURN_IF_ERROR(device_->copy_to_device(s.mla_slots.address(), s.host.mla_slots.data(), n * 4));
  MT_RETURN_IF_ERROR(device_->copy_to_device(s.mla_context.address(), context.data(), n * 4));
  s.host.device_state_indices = s.indices.address();
  s.host.device_num_accepted = s.accepted.address();
  s.host.device_mla_slots = s.mla_slots.address();
  s.host.device_mla_context = s.mla_context.address();
  dec::SpecMetadata m{.spec_sequence_masks = true,
                      .num_prefills = prefill ? 1 : 0,
                      .num_spec_decodes = prefill ? n - 1 : n,
                      .uniform_spec_sequence_length = q,
                      .spec_state_indices = dec::TensorView::dense(model::Dtype::kI32, {n, q}, s.indices.address()),
                      .num_accepted_tokens = dec::TensorView::dense(model::Dtype::kI32, {n}, s.accepted.address()),
                      .spec_query_start_loc = dec::TensorView::dense(model::Dtype::kI32, {n + 1}, s.starts.address())};
  (void)step;
  s.metadata.emplace(decode_->kda_prefix(), m);
  return s;
}

absl::Status DecodeJob::run_step(int step, DeviceStep& s) {
  const int width = o_.requests * o_.q;
  const int64_t h = config_.hidden_size, blocks = config_.block_count();
  const size_t th = static_cast<size_t>(width * h);
  const DeviceKdaCache& first = caches_.at(first_kda_);
  const dec::TensorView state = dec::TensorView::dense(model::Dtype::kF32, {slots_, dims_.kda_heads, 128, 128},
                                                       first.state.address());
  MT_ASSIGN_OR_RETURN(std::optional<dec::Step> planned,
                      decode_->plan({.width = width, .attn_metadata = &s.metadata, .kda_state = &state}));
  const int padded = static_cast<int>(std::count(s.host.mla_slots.begin(), s.host.mla_slots.end(), -1));
  if (!planned) {
    std::optional<std::string_view> reason = dec::step_reason(&s.metadata, decode_->kda_prefix(), width);
    std::printf("step %d: width %d, %d requests: the host's layers (%s)\n", step, width, o_.requests,
                reason ? std::string(*reason).c_str() : "no kernels");
    return absl::OkStatus();
  }
  int served = 0;
  for (int layer = 0; layer < config_.num_hidden_layers; ++layer) served += planned->layer(layer).has_value();
  std::printf("step %d: width %d, %d requests (%d padded): kernels for %d of %d layers\n", step, width, o_.requests,
              padded, served, config_.num_hidden_layers);

  // The residual stream entering layer 0 (the embedding's stand-in) and the AttnRes blocks.
  runtime::DeviceBuffer prefix, block_buffer;
  MT_ASSIGN_OR_RETURN(prefix, device_->allocate(th * 2));
  MT_ASSIGN_OR_RETURN(block_buffer, device_->allocate(th * static_cast<size_t>(blocks) * 2));
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> values(th);
  for (double& v : values) v = normal(rng_);
  MT_RETURN_IF_ERROR(host_->write_bf16(prefix.address(), values));
  MT_RETURN_IF_ERROR(device_->fill_bytes(block_buffer.address(), 0, th * static_cast<size_t>(blocks) * 2));
  dec::LayerIo io{.prefix = prefix.address(), .blocks = block_buffer.address(), .blocks_token_stride = blocks * h,
                  .blocks_block_stride = h, .delta = 0, .attention = nullptr};
  MT_ASSIGN_OR_RETURN(runtime::Stream stream, device_->create_stream());

  for (int layer = 0; layer < config_.num_hidden_layers; ++layer) {
    std::optional<dec::LayerLaunch> launch = planned->layer(layer);
    DeviceKdaCache* cache = caches_.contains(layer) ? &caches_.at(layer) : nullptr;
    LayerRow& row = rows_[layer];
    const bool kda = config_.is_kda_layer(layer);
    const std::string standin = host_->kind_name();
    row.standin = !launch;
    row.kind = !launch ? (kda ? "KDA + MLP: host stand-in (" + standin + ")" : "MLA: host stand-in (" + standin + ")")
               : kda   ? std::string("KDA: kernels K1 + K2")
                       : "MLA: host attention stand-in + kernel K2; stand-in: " + standin;
    // --check holds every served layer to its reference, and the stand-ins too where DSL kernels
    // run them (the reference needs no check against itself).
    const bool check_standin = o_.check && host_->kind() == StandinKind::kKernels;
    ref::LayerInput in;  // the layer's inputs, for --check
    if (o_.check && (launch || check_standin)) {
      MT_ASSIGN_OR_RETURN(in.prefix, host_->read_bf16(io.prefix, th, stream));
      if (io.delta != 0) {
        MT_ASSIGN_OR_RETURN(in.delta, host_->read_bf16(io.delta, th, stream));
      }
      MT_ASSIGN_OR_RETURN(in.blocks, host_->read_bf16(io.blocks, th * static_cast<size_t>(blocks), stream));
      in.meta = {o_.requests, o_.q, s.host.state_indices, s.host.num_accepted};
      if (kda) {
        MT_ASSIGN_OR_RETURN(ref::KdaCache c, host_->read_cache(*cache, stream));
        in.caches.push_back(std::move(c));
      }
    }
    MT_RETURN_IF_ERROR(device_->synchronize(stream));
    const auto start = std::chrono::steady_clock::now();
    if (!launch) {
      MT_RETURN_IF_ERROR(host_->run_layer(layer, io, s.host, cache, stream));
    } else {
      io.attention = [&](int l, const dec::LayerIo& at, runtime::Stream& on) { return host_->attention(l, at, s.host, on); };
      MT_RETURN_IF_ERROR((*launch)(io, stream));
    }
    MT_RETURN_IF_ERROR(device_->synchronize(stream));
    row.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++row.runs;
    if (!o_.check || (!launch && !check_standin)) continue;
    if (launch) {
      MT_RETURN_IF_ERROR(decode_->check_health());
    } else {
      MT_RETURN_IF_ERROR(device_->synchronize(stream));
      MT_RETURN_IF_ERROR(host_->check_health());
    }
    if (launch && !kda) {
      MT_ASSIGN_OR_RETURN(in.attention_output, host_->attention_output(layer, width, stream));
    }
    dec::LayerResult result;
    MT_ASSIGN_OR_RETURN(result.prefix, host_->read_bf16(io.prefix, th, stream));
    MT_ASSIGN_OR_RETURN(result.blocks, host_->read_bf16(io.blocks, th * static_cast<size_t>(blocks), stream));
    MT_ASSIGN_OR_RETURN(result.out, host_->read_bf16(io.delta, th, stream));
    if (kda) {
      MT_ASSIGN_OR_RETURN(result.cache, host_->read_cache(*cache, stream));
    }
    std::vector<kernels::k3::OutputCheck> outputs;
    if (launch) {
      MT_ASSIGN_OR_RETURN(const ref::RankLayerWeights* w, host_->weights(layer));
      MT_ASSIGN_OR_RETURN(dec::LayerCheck check, dec::check_layer(config_, layer, *w, in, result));
      outputs = std::move(check.outputs);
      if (!kda && check_standin) {
        MT_ASSIGN_OR_RETURN(kernels::k3::OutputCheck core, host_->check_attention(layer, s.host, stream));
        outputs.push_back(std::move(core));
      }
    } else {
      MT_ASSIGN_OR_RETURN(outputs, host_->check_layer(layer, in, result));
    }
    row.checked = true;
    for (const kernels::k3::OutputCheck& output : outputs) {
      row.worst_rms = std::max(row.worst_rms, output.worst_rms);
      if (output.passed()) continue;
      row.passed = checks_passed_ = false;
      std::printf("  layer %d %s: %lld of %lld values fail; first: %s\n", layer, output.name.c_str(),
                  static_cast<long long>(output.failures), static_cast<long long>(output.compared),
                  output.first_failure.c_str());
    }
  }
  MT_RETURN_IF_ERROR(decode_->after_step(stream));
  MT_RETURN_IF_ERROR(device_->synchronize(stream));
  MT_RETURN_IF_ERROR(host_->check_health());
  for (int r = 0; r < o_.requests; ++r) mla_context_[static_cast<size_t>(r)] += s.host.num_accepted[static_cast<size_t>(r)];
  return absl::OkStatus();
}

absl::Status DecodeJob::run() {
  MT_RETURN_IF_ERROR(setup());
  for (int step = 1; step <= o_.steps; ++step) {
    // Every other step pads its last request (every slot -1, one accepted token), as a graph
    // replayed for fewer requests does.
    const int padded = step % 2 == 0 && o_.requests > 1 ? 1 : 0;
    MT_ASSIGN_OR_RETURN(DeviceStep s, make_step(step, padded, false));
    MT_RETURN_IF_ERROR(run_step(step, s));
  }
  MT_ASSIGN_OR_RETURN(DeviceStep prefill, make_step(o_.steps + 1, 0, true));
  MT_RETURN_IF_ERROR(run_step(o_.steps + 1, prefill));

  double kernel_s = 0, host_s = 0;
  std::printf("\nlayer  %-64s %10s%s\n", "run by", "mean ms", o_.check ? "  worst err/RMS  check" : "");
  for (const auto& [layer, row] : rows_) {
    const double ms = row.runs ? 1e3 * row.seconds / row.runs : 0;
    (row.standin ? host_s : kernel_s) += ms;
    std::printf("%5d  %-64s %10.2f", layer, row.kind.c_str(), ms);
    if (o_.check && row.checked) std::printf("  %13.5f  %s", row.worst_rms, row.passed ? "pass" : "FAIL");
    std::printf("\n");
  }
  std::printf("a step: %.1f ms in served layers, %.1f ms in the host's stand-ins (%s; stand-ins: %s)\n", kernel_s,
              host_s,
              device_->info().vendor == dsl::Vendor::kCpu ? "the CPU interpreter: times are not the GPU's"
                                                           : "GPU kernels",
              host_->kind() == StandinKind::kKernels ? "DSL kernels on the device" : "the reference on the CPU");
  if (o_.check) {
    std::printf("%s\n", checks_passed_ ? "every served layer passes its check against the float64 reference"
                                       : "a checked layer FAILED its check against the float64 reference (see its row)");
    if (host_->kind() == StandinKind::kKernels) {
      std::printf("(the host's stand-ins, DSL kernels, are checked in their rows too: layer 0 whole, an MLA "
                  "layer's core as \"mla core\")\n");
    }
  }
  if (!checks_passed_) return absl::InternalError("a served layer failed its check against the reference");
  return absl::OkStatus();
}

}  // namespace

int decode_command(Args args) {
  const ParsedArgs parsed = parse_command_flags(
      {.command = "monotile decode",
       .file = __FILE__,
       .shared = {"model", "seed", "device", "q", "requests", "max_rows", "tp", "rank", "check"},
       .usage = kUsage},
      args);
  if (parsed.exit_status) return *parsed.exit_status;
  if (!parsed.positional.empty()) {
    return misuse(absl::StrCat("takes options only, got \"", parsed.positional[0], "\""));
  }
  Options o;
  o.model = absl::GetFlag(FLAGS_model).value_or(o.model);
  o.seed = absl::GetFlag(FLAGS_seed).value_or(o.seed);
  o.device = absl::GetFlag(FLAGS_device);
  o.standins = absl::GetFlag(FLAGS_standins);
  o.q = absl::GetFlag(FLAGS_q).value_or(o.q);
  o.requests = absl::GetFlag(FLAGS_requests).value_or(o.requests);
  o.steps = absl::GetFlag(FLAGS_steps);
  o.max_rows = absl::GetFlag(FLAGS_max_rows).value_or(o.max_rows);
  o.tp = absl::GetFlag(FLAGS_tp).value_or(o.tp);
  o.rank = absl::GetFlag(FLAGS_rank).value_or(o.rank);
  o.check = absl::GetFlag(FLAGS_check);
  if (o.standins && *o.standins != "reference" && *o.standins != "kernels") {
    return misuse(absl::StrCat("--standins ", *o.standins, ": expected reference or kernels"));
  }
  if (o.q < 1) return misuse(absl::StrCat("--q ", o.q, ": expected a positive integer"));
  if (o.requests < 1) return misuse(absl::StrCat("--requests ", o.requests, ": expected a positive integer"));
  if (o.steps < 0) return misuse(absl::StrCat("--steps ", o.steps, ": expected a non-negative integer"));
  absl::Status status = DecodeJob(o).run();
  return status.ok() ? 0 : fail(status);
}

}  // namespace monotile::tools
