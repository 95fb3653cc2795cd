// `monotile model tiny|check`: write a generated tiny checkpoint, or check a config or checkpoint
// for one TP rank (exit 0 when the kernels can serve it, 1 with every reason otherwise).
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "model/model_check.h"
#include "model/tiny_checkpoint.h"
#include "tools/command_flags.h"
#include "tools/commands.h"
#include "tools/shared_flags.h"

ABSL_FLAG(std::optional<std::string>, config, std::nullopt, "tiny: the embedded config");
ABSL_FLAG(std::optional<int>, shards, std::nullopt, "tiny: the safetensors shards");

namespace monotile::tools {
namespace {

constexpr const char* kUsage =
    "usage: monotile model tiny --out DIR [--config k3-tiny] [--seed S] [--shards N]\n"
    "       monotile model check DIR|NAME [--tp T] [--rank R]\n"
    "  tiny    writes config.json, N (default 2) safetensors shards and their index, random weights\n"
    "  check   the config summary, each layer's kind, the bytes rank R of TP size T reads per layer\n"
    "          and in all, and every reason the weights cannot be served (exit 1 when there are any);\n"
    "          NAME is an embedded config: k3, k3-tiny\n";

int misuse(const std::string& message) {
  std::fprintf(stderr, "monotile model: %s\n%s", message.c_str(), kUsage);
  return 2;
}

// Parses a subcommand's arguments: the flags of this file in `own` and the `shared` ones. Nullopt
// when parsed; else the exit status.
std::optional<int> parse(std::string_view subcommand, Args args, std::vector<std::string_view> own,
                         std::vector<std::string_view> shared, std::vector<std::string>& positional) {
  const std::string command = "monotile model " + std::string(subcommand);
  ParsedArgs parsed = parse_command_flags(
      {.command = command, .file = __FILE__, .own = std::move(own), .shared = std::move(shared), .usage = kUsage},
      args);
  if (parsed.exit_status) return parsed.exit_status;
  positional = std::move(parsed.positional);
  return std::nullopt;
}

int tiny(Args args) {
  std::vector<std::string> positional;
  if (std::optional<int> status = parse("tiny", args, {"config", "shards"}, {"out", "seed"}, positional)) return *status;
  if (!positional.empty()) return misuse("tiny takes options only, got \"" + positional[0] + "\"");
  model::TinyCheckpointOptions options;
  const std::string out = absl::GetFlag(FLAGS_out);
  if (std::optional<std::string> config = absl::GetFlag(FLAGS_config)) options.config = *config;
  options.seed = absl::GetFlag(FLAGS_seed).value_or(options.seed);
  options.shards = absl::GetFlag(FLAGS_shards).value_or(options.shards);
  if (options.shards < 1) return misuse("--shards \"" + std::to_string(options.shards) + "\" is not a positive integer");
  if (out.empty()) return misuse("tiny needs --out DIR");
  absl::Status status = model::write_tiny_checkpoint(out, options);
  if (!status.ok()) {
    std::fprintf(stderr, "monotile model tiny: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  std::printf("wrote %s (config %s, seed %llu, %d shards)\n", out.c_str(), options.config.c_str(),
              static_cast<unsigned long long>(options.seed), options.shards);
  return 0;
}

int check(Args args) {
  std::vector<std::string> positional;
  if (std::optional<int> status = parse("check", args, {}, {"tp", "rank"}, positional)) return *status;
  if (positional.size() > 1) {
    return misuse("one checkpoint folder or config name expected, got \"" + positional[0] + "\" and \"" +
                  positional[1] + "\"");
  }
  const std::string target = positional.empty() ? "" : positional[0];
  const int tp = absl::GetFlag(FLAGS_tp).value_or(1), rank = absl::GetFlag(FLAGS_rank).value_or(0);
  if (tp < 1) return misuse("--tp \"" + std::to_string(tp) + "\" is not a positive integer");
  if (rank < 0) return misuse("--rank \"" + std::to_string(rank) + "\" is not a rank");
  if (target.empty()) return misuse("check needs a checkpoint folder or a config name");
  model::ModelCheck result = model::check_model(target, tp, rank);
  std::fputs(result.report.c_str(), stdout);
  if (result.reasons.empty()) {
    std::printf("supported: no weight reasons\n");
    return 0;
  }
  std::printf("not supported, %zu reason%s:\n", result.reasons.size(), result.reasons.size() == 1 ? "" : "s");
  for (const std::string& reason : result.reasons) std::printf("  %s\n", reason.c_str());
  return 1;
}

}  // namespace

int model_command(Args args) {
  if (args.empty()) return misuse("a subcommand is needed");
  if (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args[0] == "tiny") return tiny(args.subspan(1));
  if (args[0] == "check") return check(args.subspan(1));
  return misuse("unknown subcommand \"" + std::string(args[0]) + "\"");
}

}  // namespace monotile::tools
