// `monotile layer inputs|run`: one spec-verify step of one layer on one TP rank, for parity with
// vLLM. `inputs` writes a valid random step file; `run` reads one (docs/layer_run.md), runs the
// stage's kernels (K1 then K2 on a KDA layer, K2 on an MLA layer's FFN, or K1 alone) on the CPU
// interpreter or a GPU, writes every output after the step, and with --check compares them with
// the float64 reference (exit 0 only when every output passes).
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
#include "model/dtype.h"
#include "runtime/discovery.h"
#include "support/status_macros.h"
#include "tools/commands.h"
#include "tools/device_choice.h"
#include "tools/layer_check.h"
#include "tools/layer_io.h"
#include "tools/layer_launch.h"
#include "tools/layer_weights.h"

namespace monotile::tools {
namespace {

constexpr const char* kUsage =
    "usage: monotile layer run --model DIR|NAME [--seed S] --tp T --rank R --layer L --inputs IN.safetensors\n"
    "                          --out OUT.safetensors [--stage layer|k1] [--device cpu|gpu] [--check]\n"
    "       monotile layer inputs --model DIR|NAME --tp T --rank R --layer L --requests N --q Q\n"
    "                          [--state-len SL] [--slots S] [--seed S] [--padded K] [--no-delta] [--dim-first]\n"
    "                          --out IN.safetensors\n"
    "  run     runs the layer on one step's inputs (a KDA layer: K1 then K2; an MLA layer: K2 on the\n"
    "          attention output given; --stage k1: K1 alone, also layer 0's) and writes every output and\n"
    "          cache after the step; --check compares them with the float64 reference and exits 1 unless\n"
    "          every output passes. --model NAME (k3, k3-tiny) uses seeded weights (--seed, default 1: the\n"
    "          values `monotile model tiny --seed S` writes); --device defaults to gpu when one is found\n"
    "  inputs  writes a valid random step: N requests of Q tokens (the last K padded, slots -1), a conv\n"
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
  // A KDA layer's step serves --stage k1 and the whole layer; an MLA layer's, its FFN.
  absl::StatusOr<model::ModelConfig> config = model::load_config(*o.get("--model"));
  const bool kda = !config.ok() || layer >= config->num_hidden_layers || config->is_kda_layer(layer);
  absl::StatusOr<LayerModel> m =
      open_layer_model(*o.get("--model"), std::nullopt, tp, rank, layer, kda ? LayerStage::kK1 : LayerStage::kLayer);
  if (!m.ok()) return failure(m.status());
  if (!kda) {
    for (const char* kda_only : {"--state-len", "--slots", "--padded"}) {
      if (o.get(kda_only)) {
        return misuse(absl::StrCat(kda_only, " applies to a KDA layer's caches; layer ", layer, " of ", m->config.name,
                                   " is an MLA layer, whose step has none"));
      }
    }
    for (const char* kda_only : {"--no-delta", "--dim-first"}) {
      if (o.flags.contains(kda_only)) {
        return misuse(absl::StrCat(kda_only, " applies to a KDA layer's step; layer ", layer, " of ", m->config.name,
                                   " is an MLA layer, whose prefix has the delta folded in and which has no conv state"));
      }
    }
  }
  const LayerShape shape = layer_shape(m->config, m->dims, kda, !kda, m->core_width());
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
  if (!kda) {
    step.blocks = bf16s(tokens * shape.block_count * shape.hidden, 1.0);
    step.core = bf16s(tokens * shape.core_width, 1.0);
    for (int n = 0; n <= requests; ++n) step.query_start_loc.push_back(n * q);
    const std::string out = *o.get("--out");
    if (absl::Status status = write_layer_step(out, step, shape); !status.ok()) return failure(status);
    std::printf("wrote %s: %s\n", out.c_str(), describe_step(*m, step, false).c_str());
    return 0;
  }
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

int run(Args args) {
  Options o;
  if (auto error = parse(args, {"--model", "--seed", "--tp", "--rank", "--layer", "--inputs", "--out", "--device",
                                "--stage"},
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
  const std::string stage_name = o.get("--stage").value_or("layer");
  if (stage_name != "layer" && stage_name != "k1") {
    return misuse(absl::StrCat("--stage \"", stage_name, "\" is not layer or k1"));
  }
  const LayerStage stage = stage_name == "k1" ? LayerStage::kK1 : LayerStage::kLayer;
  absl::StatusOr<LayerModel> m = open_layer_model(*o.get("--model"), seed, tp, rank, layer, stage);
  if (!m.ok()) return failure(m.status());
  const LayerShape shape = layer_shape(m->config, m->dims, m->runs_k1(), m->runs_k2(), m->core_width());
  absl::StatusOr<LayerStep> step = read_layer_step(*o.get("--inputs"), shape);
  if (!step.ok()) return failure(step.status());
  std::printf("%s\n", describe_step(*m, *step, true).c_str());
  absl::StatusOr<std::unique_ptr<runtime::Device>> device = pick_device(device_name);
  if (!device.ok()) return failure(device.status());
  absl::StatusOr<LayerRun> result = run_layer(*m, *step, shape, **device);
  if (!result.ok()) return failure(result.status());
  for (const KernelRun& kernel : result->kernels) {
    std::printf("%s ran on %s, %d programs, %.3f s\n", kernel.kernel.c_str(), result->device.c_str(), kernel.programs,
                kernel.seconds);
  }
  const std::string out = *o.get("--out");
  if (absl::Status status = write_layer_outputs(out, *step, shape, result->outputs); !status.ok()) return failure(status);
  std::printf("wrote %s\n", out.c_str());
  if (!o.flags.contains("--check")) return 0;
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
