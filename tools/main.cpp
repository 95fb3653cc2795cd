// `monotile`: the command line. Dispatches to one subcommand per file (see commands.h).
#include <cstdio>
#include <string_view>
#include <vector>

#include "support/version.h"
#include "tools/commands.h"

namespace {

struct Command {
  std::string_view name;
  int (*run)(monotile::tools::Args);
  std::string_view help;
};

constexpr Command kCommands[] = {
    {"devices", monotile::tools::devices_command, "list the GPUs and the CPU interpreter found, and why any GPU is missing"},
    {"cache", monotile::tools::cache_command, "kernel cache: stats, list, verify, prune, clear, dir"},
    {"demo", monotile::tools::demo_command, "show the compilers, compile registered kernels through the cache, run one on each GPU"},
    {"compile", monotile::tools::compile_command, "compile a kernel file or a registered kernel for targets: cache hit or not, resources"},
    {"warmup", monotile::tools::warmup_command, "fill the kernel cache (or a bundle) for targets; no GPU needed"},
    {"export", monotile::tools::export_command, "write the benchmark kernels' CUBINs and launch JSON for the bench harness"},
    {"first-call", monotile::tools::first_call_command, "time one benchmark kernel's first call on the GPU: lower, compile or cache hit, load, run"},
    {"model", monotile::tools::model_command, "the Kimi-K3 model: write a tiny checkpoint, check a checkpoint or config for a TP rank"},
    {"layer", monotile::tools::layer_command, "one KDA layer step on one TP rank: write random inputs, run K1 on them, check against float64"},
    {"decode", monotile::tools::decode_command, "the executor over a whole model: spec-verify steps through SpecializedDecode, per-layer times, --check against float64"},
};

int usage(FILE* out) {
  std::fprintf(out, "usage: monotile <command> [args]   (monotile --version: the version)\n\ncommands:\n");
  for (const Command& command : kCommands) {
    std::fprintf(out, "  %-10.*s %.*s\n", static_cast<int>(command.name.size()),
                 command.name.data(), static_cast<int>(command.help.size()), command.help.data());
  }
  return out == stdout ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty()) return usage(stderr);
  if (args[0] == "help" || args[0] == "--help" || args[0] == "-h") return usage(stdout);
  if (args[0] == "--version" || args[0] == "version") {
    std::printf("monotile %s\n", monotile::version());
    return 0;
  }
  for (const Command& command : kCommands) {
    if (command.name == args[0]) {
      return command.run(monotile::tools::Args(args).subspan(1));
    }
  }
  std::fprintf(stderr, "monotile: unknown command \"%s\"\n\n", argv[1]);
  return usage(stderr);
}
