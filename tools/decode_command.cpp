// `monotile decode`: the executor over a whole model, fed spec-verify steps as vLLM would feed
// them. It builds SpecializedDecode over the rank's weights, binds the KV caches, then runs S steps
// of random requests (random accepted counts, slots drawn from a pool with gaps, some requests
// padded) and one prefill-like step that plan must refuse. Per step it prints plan's decision; at
// the end a per-layer time table, kernel layers beside the host's (stand-ins: decode_host_layers.h,
// the float64 reference on the CPU device, simple DSL kernels on a GPU); with --check, each served
// layer's worst error against the float64 reference of that layer. With --graph each width's step
// is recorded once (decode_graph.h) and replayed, its metadata rewritten in the same buffers; a
// GPU's table sets each layer against its floor (decode_layer_bytes.h). A rank that does not fit
// the device gets its weights made there, one layer per kind aliased (decode_random_weights.h).
// This file parses the options; the run is DecodeJob (decode_job.h).
#include <cstdio>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "runtime/decode/socket_pair_group.h"
#include "tools/command_flags.h"
#include "tools/commands.h"
#include "tools/decode_job.h"
#include "tools/device_choice.h"
#include "tools/shared_flags.h"

ABSL_FLAG(std::optional<std::string>, standins, std::nullopt,
          "how the host's layers run: reference or kernels");
ABSL_FLAG(int, steps, 3, "spec-verify steps");
ABSL_FLAG(bool, graph, false, "capture each width's step once into device graphs and replay it");
ABSL_FLAG(bool, mpi, false, "one TP rank a process under mpirun: the group is MPI's world");
ABSL_FLAG(bool, fork, false,
          "TP 2 as two processes forked from this one, a socket pair their group");
ABSL_FLAG(bool, dependent_launch, false, "K1 and K2 built for programmatic dependent launch");
ABSL_FLAG(std::optional<std::string>, outputs, std::nullopt,
          "each served step's outputs written to this file (bf16), the last step's left");
ABSL_FLAG(bool, alias_weights, false,
          "random weights made on the device, one layer per kind viewed by every layer of it");

namespace monotile::tools {
namespace {

constexpr const char* kUsage =
    "usage: monotile decode [--model k3-tiny|k3|DIR] [--seed S] [--device cpu|gpu] [--q Q] "
    "[--requests N]\n"
    "                       [--steps S] [--max-rows 8|16] [--tp T --rank R] [--standins "
    "reference|kernels]\n"
    "                       [--graph] [--alias-weights] [--dependent-launch] [--k1-linear] "
    "[--check]\n"
    "                       [--mpi] [--fork] [--gpu-index N] [--outputs FILE]\n"
    "  --model     an embedded config (seeded random weights) or a checkpoint folder (default "
    "k3-tiny)\n"
    "  --seed      the seeded weights' and the steps' seed (default 1)\n"
    "  --device    cpu (the CPU interpreter) or gpu (default: a GPU when there is one)\n"
    "  --q         tokens per request, num_speculative_tokens + 1 (default 2)\n"
    "  --requests  requests per step (default 2; width = requests x q <= max-rows)\n"
    "  --steps     spec-verify steps (default 3), then one prefill-like step\n"
    "  --max-rows  the executor's widest launch (default 16)\n"
    "  --tp, --rank  run rank R of TP T alone: the other ranks' contributions to each reduction "
    "are\n"
    "              zero (stood in), and --check holds the rank to the same reference\n"
    "  --standins  how the host's layers run: the float64 reference on the CPU, or DSL kernels on "
    "the\n"
    "              device (default: kernels on a GPU, the reference on the CPU device)\n"
    "  --graph     capture each width's step once into device graphs (cut around the host's work)\n"
    "              and replay it for later steps with new metadata in the same buffers; the "
    "table's\n"
    "              times from graphs replayed, a layer's against its floor on a GPU\n"
    "  --alias-weights  random weights made on the device, one layer per kind viewed by every "
    "layer\n"
    "              of that kind (automatic for an embedded config whose rank does not fit the "
    "device)\n"
    "  --dependent-launch  K1 and K2 start on the SMs the previous kernel frees and bring their "
    "first\n"
    "              weights into L2 before they wait for its end (programmatic dependent launch on\n"
    "              NVIDIA sm_90+; elsewhere they launch as without it)\n"
    "  --k1-linear K1 with its linear in_proj (W_in streams from the launch's start, AttnRes "
    "folded in\n"
    "              at each task's end) at every width whose build takes it (K3: up to 8 tokens)\n"
    "  --check     compare every served layer with the float64 reference of that layer\n"
    "  --mpi       one TP rank a process: `mpirun -np T monotile decode --mpi ...`; the TP size "
    "is\n"
    "              MPI's world size and the rank the world rank; the ranks exchange their partial\n"
    "              sums (K2's over peer buffers, the host stand-ins' through MPI), every rank\n"
    "              printing its digests, which must agree; each rank takes GPU (its rank among\n"
    "              this machine's ranks % GPUs), ranks sharing a GPU each their share of its SMs\n"
    "  --fork      TP 2 as two processes forked from this one, a socket pair their group: --mpi's "
    "run\n"
    "              where there is no MPI (rank R on GPU R with 2+ GPUs, else both on the first)\n"
    "  --gpu-index every rank of this machine on GPU N (sharing its SMs) instead of the above\n"
    "  --outputs   write each served step's outputs (prefix, blocks, the last layer's output, the\n"
    "              digest's bf16 bytes) to FILE, the last step's left; under --mpi FILE.rank<R>\n";

int misuse(const std::string& message) {
  std::fprintf(stderr, "monotile decode: %s\n%s", message.c_str(), kUsage);
  return 2;
}

int fail(const absl::Status& status) {
  std::fprintf(stderr, "monotile decode: %s\n", std::string(status.message()).c_str());
  return 1;
}

}  // namespace

int decode_command(Args args) {
  const ParsedArgs parsed =
      parse_command_flags({.command = "monotile decode",
                           .file = __FILE__,
                           .shared = {"model", "seed", "device", "q", "requests", "max_rows", "tp",
                                      "rank", "check", "gpu_index", "k1_linear"},
                           .usage = kUsage},
                          args);
  if (parsed.exit_status) return *parsed.exit_status;
  if (!parsed.positional.empty()) {
    return misuse(absl::StrCat("takes options only, got \"", parsed.positional[0], "\""));
  }
  DecodeJobOptions o;
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
  o.graph = absl::GetFlag(FLAGS_graph);
  o.alias_weights = absl::GetFlag(FLAGS_alias_weights);
  o.dependent_launch = absl::GetFlag(FLAGS_dependent_launch);
  o.k1_linear = absl::GetFlag(FLAGS_k1_linear);
  o.mpi = absl::GetFlag(FLAGS_mpi);
  o.outputs = absl::GetFlag(FLAGS_outputs);
  o.fork = absl::GetFlag(FLAGS_fork);
  o.gpu_index = absl::GetFlag(FLAGS_gpu_index);
  if (std::optional<std::string> wrong = gpu_index_misuse(o.gpu_index, o.device)) {
    return misuse(*wrong);
  }
  if (o.fork) {
    if (o.mpi)
      return misuse("--fork with --mpi: the ranks are either forked here or MPI's; choose one");
    if (absl::GetFlag(FLAGS_rank)) {
      return misuse("--rank with --fork: both ranks run, one a process; leave --rank out");
    }
    if (absl::GetFlag(FLAGS_tp).value_or(2) != 2) {
      return misuse(absl::StrCat(
          "--tp ", o.tp,
          " with --fork: expected --tp 2 (two processes), or leave --tp out; hint: mpirun -np ",
          o.tp, " monotile decode --mpi for other sizes"));
    }
  }
  if (o.mpi) {
    if (absl::GetFlag(FLAGS_rank)) {
      return misuse(
          "--rank with --mpi: the rank is the process's MPI world rank; leave --rank out");
    }
    o.tp = absl::GetFlag(FLAGS_tp).value_or(0);
  }
  if (o.standins && *o.standins != "reference" && *o.standins != "kernels") {
    return misuse(absl::StrCat("--standins ", *o.standins, ": expected reference or kernels"));
  }
  if (o.q < 1) return misuse(absl::StrCat("--q ", o.q, ": expected a positive integer"));
  if (o.requests < 1)
    return misuse(absl::StrCat("--requests ", o.requests, ": expected a positive integer"));
  if (o.steps < 0)
    return misuse(absl::StrCat("--steps ", o.steps, ": expected a non-negative integer"));
  if (o.fork) {
    // Printed lines so far are not the child's to print again; each rank prints its own failure.
    std::fflush(stdout);
    const dec::ForkedRanks ranks = dec::run_forked_ranks([&](dec::Group& group) {
      absl::Status status = DecodeJob(o, group).run();
      if (!status.ok()) fail(status);
      std::fflush(stdout);
      std::fflush(stderr);
      return status.ok() ? std::string() : std::string(status.message());
    });
    return ranks.rank0.empty() && ranks.rank1.empty() && ranks.rank1_exited ? 0 : 1;
  }
  absl::Status status = DecodeJob(o).run();
  return status.ok() ? 0 : fail(status);
}

}  // namespace monotile::tools
