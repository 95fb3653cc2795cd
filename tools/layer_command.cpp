// `monotile layer inputs|run`: one spec-verify step of one KDA layer on one TP rank, for parity with
// vLLM. `inputs` writes a valid random step file; `run` reads one (docs/layer_run.md), runs K1 on
// the CPU interpreter or a GPU, writes every output and cache after the step, and with --check
// compares them with the float64 reference (exit 0 only when every output passes).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "jit/jit.h"
#include "kernels/k3/k1.h"
#include "kernels/reference/k3_layer_reference.h"
#include "model/dtype.h"
#include "runtime/discovery.h"
#include "runtime/k1_launch.h"
#include "support/status_macros.h"
#include "tools/commands.h"
#include "kernels/k3/k1_check.h"
#include "tools/layer_io.h"
#include "tools/layer_weights.h"

namespace monotile::tools {
namespace {

using kernels::k3::check_output;
using kernels::k3::CheckRule;
using kernels::k3::OutputCheck;
using kernels::k3::rule_for;

constexpr const char* kUsage =
    "usage: monotile layer run --model DIR|NAME [--seed S] --tp T --rank R --layer L --inputs IN.safetensors\n"
    "                          --out OUT.safetensors [--device cpu|gpu] [--check]\n"
    "       monotile layer inputs --model DIR|NAME --tp T --rank R --layer L --requests N --q Q\n"
    "                          [--state-len SL] [--slots S] [--seed S] [--padded K] [--no-delta] [--dim-first]\n"
    "                          --out IN.safetensors\n"
    "  run     runs K1 (the KDA layer's attention half) on one step's inputs and writes every output and\n"
    "          cache after the step; --check compares them with the float64 reference and exits 1 unless\n"
    "          every output passes. --model NAME (k3, k3-tiny) uses seeded weights (--seed, default 1: the\n"
    "          values `monotile model tiny --seed S` writes); --device defaults to gpu when one is found\n"
    "  inputs  writes a valid random step: N requests of Q tokens (the last K padded, slots -1), a conv\n"
    "          state of SL entries (default Q + 2), S cache slots (default N x Q + 3); --seed seeds the values\n"
    "the file's tensor names and layouts: docs/layer_run.md\n";

int misuse(const std::string& message) {
  std::fflush(stdout);
  std::fprintf(stderr, "monotile layer: %s\n%s", message.c_str(), kUsage);
  return 2;
}

int failure(const absl::Status& status) {
  std::fflush(stdout);  // what the run printed comes before the error, in one stream too
  std::fprintf(stderr, "monotile layer: %s\n", std::string(status.message()).c_str());
  return 1;
}

// Options "--name value" and flags "--name".
struct Options {
  std::map<std::string, std::string> values;
  std::set<std::string> flags;

  std::optional<std::string> get(const std::string& name) const {
    auto found = values.find(name);
    return found == values.end() ? std::nullopt : std::optional<std::string>(found->second);
  }
};

// Parses `args` against the allowed options; a misuse message on error.
std::optional<std::string> parse(Args args, const std::set<std::string>& with_value, const std::set<std::string>& flags,
                                 Options& out) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string arg(args[i]);
    if (flags.contains(arg)) {
      out.flags.insert(arg);
    } else if (with_value.contains(arg)) {
      if (i + 1 >= args.size()) return absl::StrCat("option \"", arg, "\" needs a value");
      out.values[arg] = std::string(args[++i]);
    } else {
      return absl::StrCat("unknown option \"", arg, "\"");
    }
  }
  return std::nullopt;
}

// An integer option: its value, `fallback` when absent, or a misuse message.
template <typename T>
std::optional<std::string> integer(const Options& options, const std::string& name, T minimum, std::optional<T> fallback,
                                   T& out) {
  std::optional<std::string> text = options.get(name);
  if (!text) {
    if (!fallback) return absl::StrCat(name, " is required");
    out = *fallback;
    return std::nullopt;
  }
  if (!absl::SimpleAtoi(*text, &out) || out < minimum) {
    return absl::StrCat(name, " \"", *text, "\" is not an integer >= ", minimum);
  }
  return std::nullopt;
}

double bf16_value(uint16_t bits) { return model::bf16_to_float(bits); }

std::vector<double> doubles(const std::vector<uint16_t>& bits) {
  std::vector<double> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = bf16_value(bits[i]);
  return out;
}

std::vector<double> doubles(const std::vector<float>& values) { return std::vector<double>(values.begin(), values.end()); }

// The conv state in the reference's layout [slots, SL, 3 Pl].
std::vector<double> conv_channels_last(const LayerStep& step, const std::vector<uint16_t>& conv, int64_t channels) {
  std::vector<double> out(conv.size());
  for (int64_t s = 0; s < step.slots; ++s) {
    for (int64_t e = 0; e < step.state_len; ++e) {
      for (int64_t c = 0; c < channels; ++c) {
        out[(s * step.state_len + e) * channels + c] = bf16_value(conv[step.conv_index(s, c, e, channels)]);
      }
    }
  }
  return out;
}

// The step in one line; `weights` adds where the weights come from.
std::string describe_step(const LayerModel& m, const LayerStep& step, bool weights) {
  int padded = 0;
  for (int n = 0; n < step.requests; ++n) padded += step.state_indices[n * step.q] <= 0 ? 1 : 0;
  return absl::StrCat("layer ", m.layer, " of ", m.config.name, ", tp ", m.dims.tp, " rank ", m.dims.rank,
                      weights ? ", " : "", weights ? m.weights : "", ": ", step.requests, " requests x q ", step.q, " (", padded, " without a conv slot), ", step.slots,
                      " slots, state_len ", step.state_len, ", delta ", step.has_delta ? "yes" : "no", ", conv ",
                      step.dim_first ? "dim-first" : "channels-last");
}

// ---- layer inputs ----

int inputs(Args args) {
  Options o;
  if (auto error = parse(args, {"--model", "--tp", "--rank", "--layer", "--requests", "--q", "--state-len", "--slots",
                                "--seed", "--padded", "--out"},
                         {"--no-delta", "--dim-first"}, o)) {
    return misuse(*error);
  }
  int tp = 0, rank = 0, layer = 0, requests = 0, q = 0, padded = 0;
  int64_t state_len = 0, slots = 0;
  uint64_t seed = 0;
  for (auto error : {integer<int>(o, "--tp", 1, std::nullopt, tp), integer<int>(o, "--rank", 0, std::nullopt, rank),
                     integer<int>(o, "--layer", 0, std::nullopt, layer),
                     integer<int>(o, "--requests", 1, std::nullopt, requests), integer<int>(o, "--q", 1, std::nullopt, q),
                     integer<int>(o, "--padded", 0, 0, padded), integer<uint64_t>(o, "--seed", 0, 1, seed)}) {
    if (error) return misuse(*error);
  }
  if (auto error = integer<int64_t>(o, "--state-len", 1, int64_t{q} + 2, state_len)) return misuse(*error);
  if (auto error = integer<int64_t>(o, "--slots", 1, int64_t{requests} * q + 3, slots)) return misuse(*error);
  if (!o.get("--model")) return misuse("--model is required");
  if (!o.get("--out")) return misuse("--out is required");
  if (padded > requests) return misuse(absl::StrCat("--padded ", padded, " is more than the ", requests, " requests"));
  if (slots < int64_t{requests} * q + 1) {
    return misuse(absl::StrCat("--slots ", slots, " is too few: ", requests, " requests x q ", q,
                               " need that many distinct slots after slot 0 (the null slot)"));
  }
  absl::StatusOr<LayerModel> m = open_layer_model(*o.get("--model"), std::nullopt, tp, rank, layer);
  if (!m.ok()) return failure(m.status());
  const LayerShape shape = layer_shape(m->config, m->dims);
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  auto normal = [&] { return (uniform() - 0.5) * std::sqrt(12.0); };
  auto bf16s = [&](int64_t count, double scale) {
    std::vector<uint16_t> out(static_cast<size_t>(count));
    for (uint16_t& bits : out) bits = model::bf16_from_double(scale * normal());
    return out;
  };
  LayerStep step;
  step.requests = requests;
  step.q = q;
  step.slots = slots;
  step.state_len = state_len;
  step.has_delta = !o.flags.contains("--no-delta");
  step.dim_first = o.flags.contains("--dim-first");
  const int64_t tokens = step.tokens();
  step.prefix = bf16s(tokens * shape.hidden, 1.0);
  if (step.has_delta) step.delta = bf16s(tokens * shape.hidden, 0.5);
  step.blocks = bf16s(tokens * shape.block_count * shape.hidden, 1.0);
  step.conv_state = bf16s(slots * state_len * shape.channels(), 1.0);
  step.recurrent_state.resize(static_cast<size_t>(slots * shape.heads * 128 * 128));
  for (float& value : step.recurrent_state) value = static_cast<float>(0.1 * normal());
  // Distinct slots for every live token, in a random order; padded requests use -1 (vLLM's pad).
  std::vector<int32_t> free_slots;
  for (int64_t s = 1; s < slots; ++s) free_slots.push_back(static_cast<int32_t>(s));
  std::shuffle(free_slots.begin(), free_slots.end(), rng);
  size_t next = 0;
  for (int n = 0; n < requests; ++n) {
    const bool pad = n >= requests - padded;
    for (int t = 0; t < q; ++t) step.state_indices.push_back(pad ? -1 : free_slots[next++]);
    step.num_accepted.push_back(pad ? 1 : 1 + static_cast<int32_t>(rng() % static_cast<uint64_t>(q)));
  }
  for (int n = 0; n <= requests; ++n) step.query_start_loc.push_back(n * q);
  const std::string out = *o.get("--out");
  if (absl::Status status = write_layer_step(out, step, shape); !status.ok()) return failure(status);
  std::printf("wrote %s: %s\n", out.c_str(), describe_step(*m, step, false).c_str());
  return 0;
}

// ---- layer run ----

// Device buffers of one run, freed with it.
class DeviceTensors {
 public:
  explicit DeviceTensors(runtime::Device& device) : device_(device) {}

  template <typename T>
  absl::StatusOr<runtime::DevicePtr> upload(const std::vector<T>& values) {
    const size_t bytes = std::max<size_t>(values.size() * sizeof(T), 16);
    MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer buffer, device_.allocate(bytes));
    if (!values.empty()) MT_RETURN_IF_ERROR(device_.copy_to_device(buffer.address(), values.data(), values.size() * sizeof(T)));
    const runtime::DevicePtr address = buffer.address();
    buffers_.push_back(std::move(buffer));
    return address;
  }

  template <typename T>
  absl::Status download(runtime::DevicePtr address, std::vector<T>& values) {
    return device_.copy_to_host(values.data(), address, values.size() * sizeof(T));
  }

 private:
  runtime::Device& device_;
  std::vector<runtime::DeviceBuffer> buffers_;
};

// The device `--device` names, or the default: a GPU when one is found, else the CPU.
absl::StatusOr<std::unique_ptr<runtime::Device>> pick_device(const std::optional<std::string>& wanted) {
  runtime::Discovery found = runtime::discover_devices();
  std::unique_ptr<runtime::Device> cpu, gpu;
  for (std::unique_ptr<runtime::Device>& device : found.devices) {
    if (device->info().vendor == dsl::Vendor::kCpu) {
      if (!cpu) cpu = std::move(device);
    } else if (!gpu) {
      gpu = std::move(device);
    }
  }
  if (wanted == "cpu" || (!wanted && !gpu)) return cpu;
  if (gpu) return gpu;
  std::vector<std::string> reasons;
  for (const runtime::MissingBackend& missing : found.missing) reasons.push_back(missing.reason);
  for (const std::string& skipped : found.skipped) reasons.push_back(skipped);
  return absl::NotFoundError(absl::StrCat("--device gpu: no GPU device found (", absl::StrJoin(reasons, "; "),
                                          "); hint: --device cpu runs K1 on the CPU interpreter"));
}

struct RunResult {
  LayerOutputs outputs;
  std::string device;
  int programs = 0;
  double seconds = 0;
};

absl::StatusOr<RunResult> run_k1(const LayerModel& m, const LayerStep& step, const LayerShape& shape,
                                 runtime::Device& device) {
  MT_ASSIGN_OR_RETURN(kernels::k3::K1Build build,
                      kernels::k3::k1_build(m.config, m.layer, m.dims.kda_heads, static_cast<int>(m.dims.in_proj_rows),
                                            step.tokens(), step.q, static_cast<int>(step.state_len), step.has_delta));
  RunResult result;
  result.device = runtime::describe(device.info());
  result.programs = runtime::k1_programs(device.info(), build);
  build = kernels::k3::k1_for_target(build, device.info().target);
  DeviceTensors t(device);
  runtime::K1Tensors k;
  const int64_t tokens = step.tokens(), channels = shape.channels();
  MT_ASSIGN_OR_RETURN(k.prefix, t.upload(step.prefix));
  if (step.has_delta) {
    MT_ASSIGN_OR_RETURN(k.delta, t.upload(step.delta));
  }
  MT_ASSIGN_OR_RETURN(k.blocks, t.upload(step.blocks));
  k.blocks_token_stride = shape.block_count * shape.hidden;
  k.blocks_block_stride = shape.hidden;
  const std::pair<const char*, runtime::DevicePtr*> weights[] = {
      {"self_attention_res_norm.weight", &k.ares_norm}, {"self_attention_res_proj.weight", &k.ares_proj},
      {"input_layernorm.weight", &k.in_norm},           {"self_attn.in_proj_qkvgfab.weight", &k.w_in},
      {"self_attn.f_b_proj.weight", &k.w_fb},           {"self_attn.conv1d.weight", &k.conv_w},
      {"self_attn.A_log", &k.a_log},                    {"self_attn.dt_bias", &k.dt_bias},
      {"self_attn.o_norm.weight", &k.o_norm}};
  for (const auto& [name, address] : weights) {
    MT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, load_tensor(m, name));
    MT_ASSIGN_OR_RETURN(*address, t.upload(bytes));
  }
  MT_ASSIGN_OR_RETURN(k.conv_state, t.upload(step.conv_state));
  k.conv_slot_stride = step.state_len * channels;
  k.conv_channel_stride = step.dim_first ? step.state_len : 1;
  k.conv_entry_stride = step.dim_first ? 1 : channels;
  MT_ASSIGN_OR_RETURN(k.state, t.upload(step.recurrent_state));
  k.state_slot_stride = shape.heads * 128 * 128;
  MT_ASSIGN_OR_RETURN(k.state_indices, t.upload(step.state_indices));
  k.state_indices_stride = step.q;
  MT_ASSIGN_OR_RETURN(k.num_accepted, t.upload(step.num_accepted));
  // core poisoned with a NaN: a value K1 does not write fails the check.
  MT_ASSIGN_OR_RETURN(k.core, t.upload(std::vector<uint16_t>(static_cast<size_t>(tokens * shape.projection), 0x7fc1)));

  MT_ASSIGN_OR_RETURN(runtime::Kernel kernel, runtime::load_k1(device, build, jit::Jit::process_default()));
  MT_ASSIGN_OR_RETURN(runtime::K1Launch launch, runtime::K1Launch::create(device, build, result.programs));
  MT_RETURN_IF_ERROR(launch.set_epoch(1));
  MT_ASSIGN_OR_RETURN(runtime::Stream stream, device.create_stream());
  const auto start = std::chrono::steady_clock::now();
  MT_RETURN_IF_ERROR(launch.launch(kernel, k, m.layer, stream));
  MT_RETURN_IF_ERROR(device.synchronize(stream));
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MT_RETURN_IF_ERROR(launch.check_health());

  LayerOutputs& out = result.outputs;
  out.prefix.resize(step.prefix.size());
  out.blocks.resize(step.blocks.size());
  out.x.resize(static_cast<size_t>(tokens * shape.hidden));
  out.core.resize(static_cast<size_t>(tokens * shape.projection));
  out.conv_state.resize(step.conv_state.size());
  out.recurrent_state.resize(step.recurrent_state.size());
  MT_RETURN_IF_ERROR(t.download(k.prefix, out.prefix));
  MT_RETURN_IF_ERROR(t.download(k.blocks, out.blocks));
  MT_RETURN_IF_ERROR(t.download(launch.x_rows(), out.x));
  MT_RETURN_IF_ERROR(t.download(k.core, out.core));
  MT_RETURN_IF_ERROR(t.download(k.conv_state, out.conv_state));
  MT_RETURN_IF_ERROR(t.download(k.state, out.recurrent_state));
  return result;
}

// --check: every output against kda_attention_reference; true when all pass.
absl::StatusOr<bool> check(const LayerModel& m, const LayerStep& step, const LayerShape& shape, const LayerOutputs& out) {
  MT_ASSIGN_OR_RETURN(kernels::reference::RankLayerWeights weights, load_reference_weights(m));
  kernels::reference::LayerInput input;
  input.prefix = doubles(step.prefix);
  if (step.has_delta) input.delta = doubles(step.delta);
  input.blocks = doubles(step.blocks);
  input.meta = {step.requests, step.q, step.state_indices, step.num_accepted};
  const int64_t channels = shape.channels();
  input.caches.push_back({step.slots, step.state_len, conv_channels_last(step, step.conv_state, channels),
                          doubles(step.recurrent_state)});
  MT_ASSIGN_OR_RETURN(kernels::reference::KdaAttentionOutput expected,
                      kernels::reference::kda_attention_reference(m.config, m.layer, weights, input,
                                                                  kernels::reference::Rounding::kBf16));
  // Slots the step writes; every other slot of both caches must keep its bits.
  std::set<int64_t> written;
  for (int n = 0; n < step.requests; ++n) {
    const int32_t* row = &step.state_indices[static_cast<size_t>(n * step.q)];
    if (row[0] > 0) written.insert(row[0]);
    if (row[step.num_accepted[n] - 1] > 0) {
      for (int t = 0; t < step.q; ++t) {
        if (row[t] > 0) written.insert(row[t]);
      }
    }
  }
  const int64_t conv_slot = step.state_len * channels, state_slot = shape.heads * 128 * 128;
  std::vector<bool> conv_exact(static_cast<size_t>(step.slots * conv_slot)),
      state_exact(static_cast<size_t>(step.slots * state_slot));
  for (int64_t s = 0; s < step.slots; ++s) {
    const bool untouched = !written.contains(s);
    std::fill_n(conv_exact.begin() + s * conv_slot, conv_slot, untouched);
    std::fill_n(state_exact.begin() + s * state_slot, state_slot, untouched);
  }
  const int64_t tokens = step.tokens();
  std::vector<OutputCheck> checks;
  auto add = [&](const std::string& name, const std::vector<double>& actual, const std::vector<double>& reference,
                 const std::vector<int64_t>& dims, const std::vector<bool>* exact = nullptr) {
    checks.push_back(check_output(name, actual, reference, dims, rule_for(name), exact));
  };
  add("prefix", doubles(out.prefix), expected.prefix, {tokens, shape.hidden});
  add("blocks", doubles(out.blocks), expected.blocks, {tokens, shape.block_count, shape.hidden});
  add("x", doubles(out.x), expected.x, {tokens, shape.hidden});
  add("core", doubles(out.core), expected.core, {tokens, shape.projection});
  add("conv_state", conv_channels_last(step, out.conv_state, channels), expected.cache.conv,
      {step.slots, step.state_len, channels}, &conv_exact);
  add("recurrent_state", doubles(out.recurrent_state), expected.cache.state, {step.slots, shape.heads, 128, 128},
      &state_exact);
  std::printf("check against the float64 reference (bf16 rounding points; ulps of bf16 at the reference's magnitude):\n");
  std::printf("  %-16s %10s %10s %9s %11s %10s %9s  %s\n", "output", "values", "bit-exact", "differ", "worst ulps",
              "worst/RMS", "outliers", "verdict");
  bool all = true;
  for (const OutputCheck& c : checks) {
    const CheckRule rule = rule_for(c.name);
    std::string bound = absl::StrFormat("%g ulps", rule.ulps);
    if (rule.abs_share > 0) absl::StrAppendFormat(&bound, " or %g x RMS", rule.abs_share);
    if (rule.outlier_share > 0) {
      absl::StrAppendFormat(&bound, ", %g%% outliers within %g x RMS", rule.outlier_share * 100, rule.outlier_abs_share);
    }
    std::printf("  %-16s %10lld %10lld %9lld %11.2f %10.2e %9lld  %s (%s)\n", c.name.c_str(),
                static_cast<long long>(c.compared), static_cast<long long>(c.exact_compared),
                static_cast<long long>(c.differing), c.worst_ulps, c.worst_rms, static_cast<long long>(c.outliers),
                c.passed() ? "pass" : "FAIL", bound.c_str());
    all = all && c.passed();
  }
  for (const OutputCheck& c : checks) {
    if (!c.passed()) std::printf("  %s: %lld failures; first: %s\n", c.name.c_str(), static_cast<long long>(c.failures), c.first_failure.c_str());
  }
  std::printf("%s\n", all ? "every output passes" : "some outputs FAIL");
  return all;
}

int run(Args args) {
  Options o;
  if (auto error = parse(args, {"--model", "--seed", "--tp", "--rank", "--layer", "--inputs", "--out", "--device"},
                         {"--check"}, o)) {
    return misuse(*error);
  }
  int tp = 0, rank = 0, layer = 0;
  for (auto error : {integer<int>(o, "--tp", 1, std::nullopt, tp), integer<int>(o, "--rank", 0, std::nullopt, rank),
                     integer<int>(o, "--layer", 0, std::nullopt, layer)}) {
    if (error) return misuse(*error);
  }
  std::optional<uint64_t> seed;
  if (o.get("--seed")) {
    uint64_t value = 0;
    if (auto error = integer<uint64_t>(o, "--seed", 0, std::nullopt, value)) return misuse(*error);
    seed = value;
  }
  for (const char* required : {"--model", "--inputs", "--out"}) {
    if (!o.get(required)) return misuse(absl::StrCat(required, " is required"));
  }
  const std::optional<std::string> device_name = o.get("--device");
  if (device_name && *device_name != "cpu" && *device_name != "gpu") {
    return misuse(absl::StrCat("--device \"", *device_name, "\" is not cpu or gpu"));
  }
  absl::StatusOr<LayerModel> m = open_layer_model(*o.get("--model"), seed, tp, rank, layer);
  if (!m.ok()) return failure(m.status());
  const LayerShape shape = layer_shape(m->config, m->dims);
  absl::StatusOr<LayerStep> step = read_layer_step(*o.get("--inputs"), shape);
  if (!step.ok()) return failure(step.status());
  std::printf("%s\n", describe_step(*m, *step, true).c_str());
  absl::StatusOr<std::unique_ptr<runtime::Device>> device = pick_device(device_name);
  if (!device.ok()) return failure(device.status());
  absl::StatusOr<RunResult> result = run_k1(*m, *step, shape, **device);
  if (!result.ok()) return failure(result.status());
  std::printf("K1 ran on %s, %d programs, %.3f s\n", result->device.c_str(), result->programs, result->seconds);
  const std::string out = *o.get("--out");
  if (absl::Status status = write_layer_outputs(out, *step, shape, result->outputs); !status.ok()) return failure(status);
  std::printf("wrote %s\n", out.c_str());
  if (!o.flags.contains("--check")) return 0;
  absl::StatusOr<bool> passed = check(*m, *step, shape, result->outputs);
  if (!passed.ok()) return failure(passed.status());
  return *passed ? 0 : 1;
}

}  // namespace

int layer_command(Args args) {
  if (args.empty()) return misuse("a subcommand is needed");
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args[0] == "run") return run(args.subspan(1));
  if (args[0] == "inputs") return inputs(args.subspan(1));
  return misuse(absl::StrCat("unknown subcommand \"", std::string(args[0]), "\""));
}

}  // namespace monotile::tools
