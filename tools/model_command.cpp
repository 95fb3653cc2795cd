// `monotile model tiny|check`: write a generated tiny checkpoint, or check a config or checkpoint
// for one TP rank (exit 0 when the kernels can serve it, 1 with every reason otherwise).
#include <cstdio>
#include <string>

#include "absl/strings/numbers.h"
#include "model/model_check.h"
#include "model/tiny_checkpoint.h"
#include "tools/commands.h"

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

int tiny(Args args) {
  model::TinyCheckpointOptions options;
  std::string out;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg(args[i]);
    if (i + 1 >= args.size()) return misuse("option \"" + arg + "\" needs a value");
    std::string value(args[++i]);
    if (arg == "--out") {
      out = value;
    } else if (arg == "--config") {
      options.config = value;
    } else if (arg == "--seed") {
      if (!absl::SimpleAtoi(value, &options.seed)) return misuse("--seed \"" + value + "\" is not an unsigned integer");
    } else if (arg == "--shards") {
      if (!absl::SimpleAtoi(value, &options.shards) || options.shards < 1) {
        return misuse("--shards \"" + value + "\" is not a positive integer");
      }
    } else {
      return misuse("unknown option \"" + arg + "\"");
    }
  }
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
  std::string target;
  int tp = 1, rank = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg(args[i]);
    if (!arg.starts_with("--")) {
      if (!target.empty()) return misuse("one checkpoint folder or config name expected, got \"" + target + "\" and \"" + arg + "\"");
      target = arg;
      continue;
    }
    if (i + 1 >= args.size()) return misuse("option \"" + arg + "\" needs a value");
    std::string value(args[++i]);
    if (arg == "--tp") {
      if (!absl::SimpleAtoi(value, &tp) || tp < 1) return misuse("--tp \"" + value + "\" is not a positive integer");
    } else if (arg == "--rank") {
      if (!absl::SimpleAtoi(value, &rank) || rank < 0) return misuse("--rank \"" + value + "\" is not a rank");
    } else {
      return misuse("unknown option \"" + arg + "\"");
    }
  }
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
