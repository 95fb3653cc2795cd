// `monotile layer inputs|run`: one spec-verify step of one layer on one TP rank, for parity with
// vLLM. `inputs` writes a valid random step file; `run` reads one (docs/layer_run.md), runs the
// stage's kernels (K1 then K2 on a KDA layer, K2 on an MLA layer's FFN, or K1 alone) on the CPU
// interpreter or a GPU, writes every output after the step, and with --check compares them with
// the float64 reference (exit 0 only when every output passes).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "jit/jit.h"
#include "runtime/decode/tp_reasons.h"
#include "runtime/discovery.h"
#include "support/status_macros.h"
#include "support/strings.h"
#include "tools/command_flags.h"
#include "tools/commands.h"
#include "tools/device_choice.h"
#include "tools/layer_check.h"
#include "tools/layer_io.h"
#include "tools/layer_launch.h"
#include "tools/layer_steps.h"
#include "tools/layer_weights.h"
#include "tools/shared_flags.h"

ABSL_FLAG(std::optional<int>, layer, std::nullopt, "the layer");
ABSL_FLAG(std::string, inputs, "", "run: the step file read");
ABSL_FLAG(std::optional<std::string>, stage, std::nullopt, "run: layer or k1");
ABSL_FLAG(std::optional<int64_t>, state_len, std::nullopt, "inputs: conv state entries");
ABSL_FLAG(std::optional<int64_t>, slots, std::nullopt, "inputs: cache slots");
ABSL_FLAG(std::optional<int>, padded, std::nullopt, "inputs: padded requests");
ABSL_FLAG(bool, delta, true, "inputs: a delta (--no-delta: none)");
ABSL_FLAG(bool, dim_first, false, "inputs: the conv state dim-first");

namespace monotile::tools {
namespace {

constexpr const char* kUsage =
    "usage: monotile layer run --model DIR|NAME [--seed S] --tp T --rank R --layer L --inputs IN.safetensors\n"
    "                          --out OUT.safetensors [--stage layer|k1] [--device cpu|gpu] [--gpu-index N] [--check]\n"
    "       monotile layer inputs --model DIR|NAME --tp T --rank R --layer L --requests N --q Q\n"
    "                          [--state-len SL] [--slots S] [--seed S] [--padded K] [--no-delta] [--dim-first]\n"
    "                          --out IN.safetensors\n"
    "  run     runs the layer on one step's inputs (a KDA layer: K1 then K2; an MLA layer: K2 on the\n"
    "          attention output given; --stage k1: K1 alone, also layer 0's) and writes every output and\n"
    "          cache after the step; --check compares them with the float64 reference and exits 1 unless\n"
    "          every output passes. --model NAME (k3, k3-tiny) uses seeded weights (--seed, default 1: the\n"
    "          values `monotile model tiny --seed S` writes); --device defaults to gpu when one is found:\n"
    "          GPU 0, or GPU N with --gpu-index N\n"
    "  inputs  writes a valid random step: N requests of Q tokens (the last K padded as vLLM pads: slot 0,\n"
    "          query_start_loc repeating the last real end), a conv\n"
    "          state of SL entries (default Q + 2), S cache slots (default N x Q + 3); --seed seeds the values;\n"
    "          for an MLA layer the prefix, blocks and the attention output core (no caches)\n"
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

// Parses a subcommand's arguments: the flags of this file in `own` and the `shared` ones, no
// positional argument. Nullopt when parsed; else the exit status.
std::optional<int> parse(std::string_view subcommand, Args args, std::vector<std::string_view> own,
                         std::vector<std::string_view> shared, std::set<std::string>* given = nullptr) {
  const std::string command = absl::StrCat("monotile layer ", to_absl(subcommand));
  const ParsedArgs parsed = parse_command_flags(
      {.command = command, .file = __FILE__, .own = std::move(own), .shared = std::move(shared), .usage = kUsage},
      args);
  if (parsed.exit_status) return parsed.exit_status;
  if (!parsed.positional.empty()) return misuse(absl::StrCat("takes options only, got \"", parsed.positional[0], "\""));
  if (given != nullptr) *given = parsed.given;
  return std::nullopt;
}

// An integer option: its value, `fallback` when absent, or a misuse message.
template <typename T>
std::optional<std::string> integer(const std::string& name, const std::optional<T>& value, T minimum,
                                   std::optional<T> fallback, T& out) {
  if (!value) {
    if (!fallback) return absl::StrCat(name, " is required");
    out = *fallback;
    return std::nullopt;
  }
  out = *value;
  if (out < minimum) return absl::StrCat(name, " \"", out, "\" is not an integer >= ", minimum);
  return std::nullopt;
}

// The step in one line; `weights` adds where the weights come from.
std::string describe_step(const LayerModel& m, const LayerStep& step, bool weights) {
  if (!m.kda()) {
    return absl::StrCat("layer ", m.layer, " of ", m.config.name, " (MLA: the FFN), tp ", m.dims.tp, " rank ",
                        m.dims.rank, weights ? ", " : "", weights ? m.weights : "", ": ", step.requests,
                        " requests x q ", step.q, ", core given");
  }
  int padded = 0;
  for (int n = 0; n < step.requests; ++n) padded += step.state_indices[n * step.q] <= 0 ? 1 : 0;
  return absl::StrCat("layer ", m.layer, " of ", m.config.name, ", tp ", m.dims.tp, " rank ", m.dims.rank,
                      weights ? ", " : "", weights ? m.weights : "", ": ", step.requests, " requests x q ", step.q, " (", padded, " without a conv slot), ", step.slots,
                      " slots, state_len ", step.state_len, ", delta ", step.has_delta ? "yes" : "no", ", conv ",
                      step.dim_first ? "dim-first" : "channels-last");
}

// ---- layer inputs ----

int inputs(Args args) {
  std::set<std::string> given;
  if (std::optional<int> status =
          parse("inputs", args, {"layer", "state_len", "slots", "padded", "delta", "dim_first"},
                {"model", "tp", "rank", "requests", "q", "seed", "out"}, &given)) {
    return *status;
  }
  int tp = 0, rank = 0, layer = 0, requests = 0, q = 0, padded = 0;
  int64_t state_len = 0, slots = 0;
  uint64_t seed = 0;
  for (auto error : {integer<int>("--tp", absl::GetFlag(FLAGS_tp), 1, std::nullopt, tp),
                     integer<int>("--rank", absl::GetFlag(FLAGS_rank), 0, std::nullopt, rank),
                     integer<int>("--layer", absl::GetFlag(FLAGS_layer), 0, std::nullopt, layer),
                     integer<int>("--requests", absl::GetFlag(FLAGS_requests), 1, std::nullopt, requests),
                     integer<int>("--q", absl::GetFlag(FLAGS_q), 1, std::nullopt, q),
                     integer<int>("--padded", absl::GetFlag(FLAGS_padded), 0, 0, padded),
                     integer<uint64_t>("--seed", absl::GetFlag(FLAGS_seed), 0, 1, seed)}) {
    if (error) return misuse(*error);
  }
  if (auto error = integer<int64_t>("--state-len", absl::GetFlag(FLAGS_state_len), 1, int64_t{q} + 2, state_len)) {
    return misuse(*error);
  }
  if (auto error = integer<int64_t>("--slots", absl::GetFlag(FLAGS_slots), 1, int64_t{requests} * q + 3, slots)) {
    return misuse(*error);
  }
  const std::optional<std::string> model_name = absl::GetFlag(FLAGS_model);
  if (!model_name) return misuse("--model is required");
  const std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) return misuse("--out is required");
  if (padded >= requests) {
    return misuse(absl::StrCat("--padded ", padded, " leaves none of the ", requests,
                               " requests real; expected fewer (vLLM pads a step of at least one real request)"));
  }
  if (slots < int64_t{requests} * q + 1) {
    return misuse(absl::StrCat("--slots ", slots, " is too few: ", requests, " requests x q ", q,
                               " need that many distinct slots after slot 0 (the null slot)"));
  }
  // A KDA layer's step serves --stage k1 and the whole layer; an MLA layer's, its FFN.
  absl::StatusOr<model::ModelConfig> config = model::load_config(*model_name);
  const bool kda = !config.ok() || layer >= config->num_hidden_layers || config->is_kda_layer(layer);
  absl::StatusOr<LayerModel> m =
      open_layer_model(*model_name, std::nullopt, tp, rank, layer, kda ? LayerStage::kK1 : LayerStage::kLayer);
  if (!m.ok()) return failure(m.status());
  if (!kda) {
    for (const char* kda_only : {"--state-len", "--slots", "--padded"}) {
      if (given.contains(absl::StrReplaceAll(kda_only + 2, {{"-", "_"}}))) {
        return misuse(absl::StrCat(kda_only, " applies to a KDA layer's caches; layer ", layer, " of ", m->config.name,
                                   " is an MLA layer, whose step has none"));
      }
    }
    for (const auto& [kda_only, name] : {std::pair{"--no-delta", "delta"}, {"--dim-first", "dim_first"}}) {
      if (given.contains(name)) {
        return misuse(absl::StrCat(kda_only, " applies to a KDA layer's step; layer ", layer, " of ", m->config.name,
                                   " is an MLA layer, whose prefix has the delta folded in and which has no conv state"));
      }
    }
  }
  const LayerShape shape = layer_shape(m->config, m->dims, kda, !kda, m->core_width());
  const LayerStep step = random_layer_step(shape, {.requests = requests,
                                                   .q = q,
                                                   .state_len = state_len,
                                                   .slots = slots,
                                                   .padded = padded,
                                                   .delta = absl::GetFlag(FLAGS_delta),
                                                   .dim_first = absl::GetFlag(FLAGS_dim_first),
                                                   .seed = seed});
  if (absl::Status status = write_layer_step(out, step, shape); !status.ok()) return failure(status);
  std::printf("wrote %s: %s\n", out.c_str(), describe_step(*m, step, false).c_str());
  return 0;
}

// ---- layer run ----

int run(Args args) {
  if (std::optional<int> status = parse("run", args, {"layer", "inputs", "stage"},
                                        {"model", "seed", "tp", "rank", "out", "device", "check", "gpu_index"})) {
    return *status;
  }
  int tp = 0, rank = 0, layer = 0;
  for (auto error : {integer<int>("--tp", absl::GetFlag(FLAGS_tp), 1, std::nullopt, tp),
                     integer<int>("--rank", absl::GetFlag(FLAGS_rank), 0, std::nullopt, rank),
                     integer<int>("--layer", absl::GetFlag(FLAGS_layer), 0, std::nullopt, layer)}) {
    if (error) return misuse(*error);
  }
  const std::optional<uint64_t> seed = absl::GetFlag(FLAGS_seed);
  const std::optional<std::string> model_name = absl::GetFlag(FLAGS_model);
  const std::string inputs_path = absl::GetFlag(FLAGS_inputs), out = absl::GetFlag(FLAGS_out);
  if (!model_name) return misuse("--model is required");
  if (inputs_path.empty()) return misuse("--inputs is required");
  if (out.empty()) return misuse("--out is required");
  const std::optional<std::string> device_name = absl::GetFlag(FLAGS_device);
  if (device_name && *device_name != "cpu" && *device_name != "gpu") {
    return misuse(absl::StrCat("--device \"", *device_name, "\" is not cpu or gpu"));
  }
  const std::optional<int> gpu_index = absl::GetFlag(FLAGS_gpu_index);
  if (std::optional<std::string> wrong = gpu_index_misuse(gpu_index, device_name)) return misuse(*wrong);
  const std::string stage_name = absl::GetFlag(FLAGS_stage).value_or("layer");
  if (stage_name != "layer" && stage_name != "k1") {
    return misuse(absl::StrCat("--stage \"", stage_name, "\" is not layer or k1"));
  }
  const LayerStage stage = stage_name == "k1" ? LayerStage::kK1 : LayerStage::kLayer;
  absl::StatusOr<LayerModel> m = open_layer_model(*model_name, seed, tp, rank, layer, stage);
  if (!m.ok()) return failure(m.status());
  const LayerShape shape = layer_shape(m->config, m->dims, m->runs_k1(), m->runs_k2(), m->core_width());
  absl::StatusOr<LayerStep> step = read_layer_step(inputs_path, shape);
  if (!step.ok()) return failure(step.status());
  std::printf("%s\n", describe_step(*m, *step, true).c_str());
  if (m->runs_k2() && m->dims.tp > 1) {
    // K2's reductions (o_proj's, the latent's, the final one) take this rank's partials alone.
    std::printf("%s\n", runtime::decode::other_ranks_stood_in_note(m->dims.tp, m->dims.rank).c_str());
  }
  // One process alone: GPU 0 (local rank 0 of 1), or --gpu-index's, with every compute unit.
  absl::StatusOr<PickedDevice> device = pick_rank_device(device_name, 0, 1, gpu_index);
  if (!device.ok()) return failure(device.status());
  absl::StatusOr<LayerRun> result = run_layer(*m, *step, shape, *device->device);
  if (!result.ok()) return failure(result.status());
  for (const KernelRun& kernel : result->kernels) {
    std::printf("%s ran on %s, %d programs, %.3f s\n", kernel.kernel.c_str(), result->device.c_str(), kernel.programs,
                kernel.seconds);
  }
  if (absl::Status status = write_layer_outputs(out, *step, shape, result->outputs); !status.ok()) return failure(status);
  std::printf("wrote %s\n", out.c_str());
  if (!absl::GetFlag(FLAGS_check)) return 0;
  absl::StatusOr<bool> passed = check_layer(*m, *step, shape, result->outputs);
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
