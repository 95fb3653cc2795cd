// exchange_bench: the time K2's reduction across TP ranks takes by itself (the exchange probe,
// kernels/k3/exchange_probe.h) at [T, H] bf16. Two ranks as two processes (run_forked_ranks: forked
// before either touches the driver, their group a socket pair), or with --mpi one rank a process of
// MPI's world (`mpirun -np N exchange_bench --mpi`). A rank takes GPU (its local rank % GPUs), as
// `monotile decode` does (tools/device_choice.h): on a machine of one GPU the ranks share it, each
// with its share of the SMs (at most one program a 64-column share); with a GPU a rank, all of its
// SMs. --gpu-index N puts every rank on GPU N. Per T: the bytes a rank hands in; the exchange's
// time by the GPU's global timer (from the last program of any rank to start to the last to end:
// one clock where the ranks share a GPU, each GPU's own otherwise, the span then holding their
// offset); each launch's time by events on rank 0 after a barrier through the group; the chain:
// --chain exchanges back to back on each rank's stream (the epoch bumped by a launch between them),
// events around them over the count, the number a loop of all-reduces (NCCL's) compares with; the
// graph: the same chain captured once and its replays timed alike (no host launch cost); and
// the copy floor measured in the same run: a device copy of the rank's partial rows into the next
// rank's buffer (events), and the 1 GiB copy's bandwidth. Medians over --iterations. Every rank's
// reduced rows must equal rank 0's bit for bit. Ranks sharing a GPU without MPS are time-sliced by
// the driver: the times then include the slices, and the output says whether an MPS control daemon
// serves the GPU (a WARNING line without one). --json FILE writes the table (bench/allreduce.py
// reads it). Without a GPU it says why and exits 0 (the --json file says so too); --cpu runs it on
// the CPU interpreter instead (two processes there too, their peer buffers shared memory), a check
// of the benchmark itself whose times are not a GPU's.
// usage: exchange_bench [--iterations N] [--chain N] [--tokens 4,8,16] [--hidden H] [--cpu]
//                       [--gpu-index N] [--mpi] [--json FILE]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "kernels/k3/bench_timing.h"
#include "model/dtype.h"
#include "runtime/decode/exchange_probe_rank.h"
#include "runtime/decode/mpi_group.h"
#include "runtime/decode/mps_status.h"
#include "runtime/decode/socket_pair_group.h"
#include "runtime/discovery.h"
#include "support/status_macros.h"
#include "tools/device_choice.h"

namespace monotile::runtime::decode {
namespace {

struct Options {
  bool cpu = false;  // the CPU interpreter: a check of the benchmark itself, not a GPU's times
  bool mpi = false;  // the ranks are MPI's world, not two forked processes
  int iterations = 50;
  int chain = 50;                // exchanges a chain launches back to back
  std::optional<int> gpu_index;  // every rank on this GPU
  std::string json;              // --json FILE, written by rank 0
  std::vector<int> tokens = {4, 8, 16};
  int64_t hidden = 7168;
};

// One T's numbers.
struct Row {
  int tokens = 0;
  double exchange_us = 0, launch_us = 0, chain_us = 0, graph_us = 0, copy_us = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The group's barrier: an empty all_gather.
absl::Status barrier(Group& group) {
  return group.all_gather("").status();
}

// Both ranks' (latest start, latest end) of their programs' stamps: the exchange's span.
absl::StatusOr<double> exchange_ns(Group& group, const std::vector<int64_t>& clock) {
  int64_t mine[2] = {INT64_MIN, INT64_MIN};
  for (size_t p = 0; p + 1 < clock.size(); p += 2) {
    mine[0] = std::max(mine[0], clock[p]);
    mine[1] = std::max(mine[1], clock[p + 1]);
  }
  MT_ASSIGN_OR_RETURN(
      std::vector<std::string> all,
      group.all_gather(std::string(reinterpret_cast<const char*>(mine), sizeof mine)));
  int64_t start = INT64_MIN, end = INT64_MIN;
  for (const std::string& r : all) {
    int64_t theirs[2];
    std::memcpy(theirs, r.data(), sizeof theirs);
    start = std::max(start, theirs[0]);
    end = std::max(end, theirs[1]);
  }
  return static_cast<double>(end - start);
}

absl::StatusOr<float> timed(Device& device, Stream& stream,
                            const std::function<absl::Status()>& work) {
  MT_ASSIGN_OR_RETURN(Event start, device.create_event());
  MT_ASSIGN_OR_RETURN(Event end, device.create_event());
  MT_RETURN_IF_ERROR(device.record(start, stream));
  MT_RETURN_IF_ERROR(work());
  MT_RETURN_IF_ERROR(device.record(end, stream));
  MT_RETURN_IF_ERROR(device.synchronize(end));
  return device.elapsed_ms(start, end);
}

// The median over --iterations (after one to warm up) of a chain's time per exchange, the slowest
// rank's: `chain` enqueues --chain exchanges on `stream`, timed by events around it after a
// barrier.
absl::StatusOr<double> chained_us(Group& group, Device& device, Stream& stream,
                                  ExchangeProbeRank& probe, const Options& o,
                                  const std::function<absl::Status()>& chain) {
  std::vector<double> times;
  for (int i = 0; i < o.iterations + 1; ++i) {
    MT_RETURN_IF_ERROR(barrier(group));
    MT_ASSIGN_OR_RETURN(float ms, timed(device, stream, chain));
    MT_RETURN_IF_ERROR(probe.check_health());
    const double us = ms * 1e3 / o.chain;
    MT_ASSIGN_OR_RETURN(
        std::vector<std::string> all,
        group.all_gather(std::string(reinterpret_cast<const char*>(&us), sizeof us)));
    double slowest = 0;
    for (const std::string& r : all) {
      double theirs = 0;
      std::memcpy(&theirs, r.data(), sizeof theirs);
      slowest = std::max(slowest, theirs);
    }
    if (i >= 1) times.push_back(slowest);  // the first chain warms up
  }
  return median(times);
}

// A chain of `count` exchanges of T rows recorded into a graph (run by its replays, each bumping
// the device's epoch `count` times).
absl::StatusOr<Graph> captured_chain(Device& device, Stream& stream, ExchangeProbeRank& probe,
                                     int tokens, int count) {
  MT_RETURN_IF_ERROR(device.begin_capture(stream));
  absl::Status recorded = probe.launch_chain(tokens, count, stream);
  absl::StatusOr<Graph> graph = device.end_capture(stream);
  MT_RETURN_IF_ERROR(recorded);
  return graph;
}

// This rank's device: the CPU interpreter with --cpu, else its GPU by tools/device_choice.h's rule
// (null with `skip` set to why there is none), and how many of this machine's ranks share it.
struct RankDevice {
  std::unique_ptr<Device> device;
  tools::RankGpu gpu;
};

absl::StatusOr<RankDevice> pick_device(Group& group, const Options& o, std::string* skip) {
  Discovery found = discover_devices();
  std::vector<std::unique_ptr<Device>> gpus;
  for (std::unique_ptr<Device>& device : found.devices) {
    const dsl::Vendor vendor = device->info().vendor;
    if (o.cpu && vendor == dsl::Vendor::kCpu) return RankDevice{std::move(device), {}};
    if (vendor != dsl::Vendor::kCpu && (gpus.empty() || gpus.front()->info().vendor == vendor))
      gpus.push_back(std::move(device));
  }
  // Every rank of the machine decides the same: none enters the group's collectives.
  if (o.cpu || gpus.empty()) {
    *skip = no_gpu_reason(found);
    return RankDevice{};
  }
  const int count = static_cast<int>(gpus.size());
  tools::RankGpu gpu = tools::rank_gpu(group.local_rank(), group.local_size(), count);
  if (o.gpu_index) {
    MT_ASSIGN_OR_RETURN(gpu, tools::rank_gpu_at(*o.gpu_index, group.local_size(), count));
  }
  return RankDevice{std::move(gpus[static_cast<size_t>(gpu.index)]), gpu};
}

// What rank 0 prints and writes.
struct Output {
  std::string report;
  std::string json_header;               // --json: the document's leading members
  std::vector<std::string> json_shapes;  // --json: a row a T
};

// One rank: "" with rank 0's table in `out`, "skip: <why>" without a GPU, else what failed.
std::string run_rank(Group& group, const Options& o, Output* out) {
  std::string skip;
  absl::StatusOr<RankDevice> picked = pick_device(group, o, &skip);
  if (!picked.ok()) return std::string(picked.status().message());
  if (!picked->device) return absl::StrCat("skip: ", skip);
  std::unique_ptr<Device> gpu = std::move(picked->device);
  const int tp = group.size();
  const int shares = static_cast<int>(o.hidden / kernels::k3::kExchangeColumns);
  const int units = gpu->info().compute_units / std::max(1, picked->gpu.sharers);
  const int programs = o.cpu ? 2 : std::max(1, std::min(shares, units));
  absl::StatusOr<std::unique_ptr<ExchangeProbeRank>> made = ExchangeProbeRank::create(
      *gpu, group, jit::Jit::process_default(), o.tokens, o.hidden, programs,
      /*wait_ns=*/10'000'000'000);
  if (!made.ok()) return std::string(made.status().message());
  ExchangeProbeRank& probe = **made;
  absl::StatusOr<Stream> stream = gpu->create_stream();
  if (!stream.ok()) return std::string(stream.status().message());
  std::mt19937 rng(7 + group.rank());
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<Row> rows;
  for (int t : o.tokens) {
    Row row{.tokens = t};
    std::vector<uint16_t> bits(static_cast<size_t>(t * o.hidden));
    for (uint16_t& b : bits) b = model::bf16_from_double(normal(rng));
    std::vector<double> exchange, launch, copy;
    absl::Status status = probe.write_source(t, bits);
    for (int i = 0; status.ok() && i < o.iterations + 3; ++i) {
      status = barrier(group);
      if (!status.ok()) break;
      absl::StatusOr<float> ms = timed(*gpu, *stream, [&] { return probe.launch(t, *stream); });
      if (!ms.ok()) {
        status = ms.status();
        break;
      }
      status = probe.check_health();
      if (!status.ok()) break;
      absl::StatusOr<std::vector<int64_t>> clock = probe.clock();
      absl::StatusOr<double> ns = clock.ok() ? exchange_ns(group, *clock) : clock.status();
      if (!ns.ok()) {
        status = ns.status();
        break;
      }
      if (i < 3) continue;  // warm-up
      exchange.push_back(*ns / 1e3);
      launch.push_back(*ms * 1e3);
    }
    // The chains: each rank's exchanges back to back, launched one by one, then captured once into
    // a graph and replayed (without the host's launch cost).
    absl::StatusOr<double> chain =
        status.ok() ? chained_us(group, *gpu, *stream, probe, o,
                                 [&] { return probe.launch_chain(t, o.chain, *stream); })
                    : status;
    if (chain.ok()) {
      row.chain_us = *chain;
      absl::StatusOr<Graph> graph = captured_chain(*gpu, *stream, probe, t, o.chain);
      absl::StatusOr<double> replayed =
          graph.ok() ? chained_us(group, *gpu, *stream, probe, o,
                                  [&] { return gpu->replay(*graph, *stream); })
                     : graph.status();
      status = replayed.ok() ? probe.adopt_device_epoch() : replayed.status();
      if (replayed.ok()) row.graph_us = *replayed;
    } else {
      status = chain.status();
    }
    if (!status.ok()) return absl::StrCat("T ", t, ": ", status.message());
    // Every rank's reduced rows, bit for bit rank 0's.
    absl::StatusOr<std::vector<uint16_t>> reduced = probe.reduced(t);
    if (!reduced.ok()) return std::string(reduced.status().message());
    absl::StatusOr<std::vector<std::string>> all = group.all_gather(
        std::string(reinterpret_cast<const char*>(reduced->data()), reduced->size() * 2));
    if (!all.ok()) return std::string(all.status().message());
    for (int r = 1; r < tp; ++r) {
      if ((*all)[static_cast<size_t>(r)] != (*all)[0])
        return absl::StrCat("T ", t, ": rank ", r, "'s reduced rows differ from rank 0's");
    }
    // The copy floor: this rank's partial rows into the next rank's buffer, one rank at a time.
    for (int turn = 0; turn < tp; ++turn) {
      if (absl::Status s = barrier(group); !s.ok()) return std::string(s.message());
      if (turn != group.rank()) continue;
      for (int i = 0; i < o.iterations + 3; ++i) {
        absl::StatusOr<float> ms = timed(*gpu, *stream, [&] {
          return gpu->copy_on_device_async(probe.peer((group.rank() + 1) % tp), probe.source(),
                                           static_cast<size_t>(t * o.hidden) * 2, *stream);
        });
        if (!ms.ok()) return std::string(ms.status().message());
        if (i >= 3) copy.push_back(*ms * 1e3);
      }
    }
    row.exchange_us = median(exchange);
    row.launch_us = median(launch);
    row.copy_us = median(copy);
    rows.push_back(row);
  }
  // Which GPU each rank took: one for all, or one a rank.
  const int mine = picked->gpu.index;
  absl::StatusOr<std::vector<std::string>> indices =
      group.all_gather(std::string(reinterpret_cast<const char*>(&mine), sizeof mine));
  if (!indices.ok()) return std::string(indices.status().message());
  bool shared = true;
  for (const std::string& r : *indices) shared = shared && r == (*indices)[0];
  if (group.rank() != 0) return barrier(group).ok() ? "" : "rank 0 left";
  absl::StatusOr<kernels::k3::Timing> big = kernels::k3::copy_floor(*gpu, *stream, o.cpu ? 1 : 10);
  if (absl::Status s = barrier(group); !s.ok()) return std::string(s.message());
  if (!big.ok()) return std::string(big.status().message());
  const double bandwidth = kernels::k3::copy_bandwidth(*big);
  const std::string where =
      shared ? describe(gpu->info())
             : absl::StrCat(tp, " GPUs, one a rank (rank 0 on ", describe(gpu->info()), ")");
  std::string& r = out->report;
  absl::StrAppendFormat(
      &r,
      "exchange_bench: K2's reduction across %d ranks alone (the exchange probe), %d processes on "
      "%s, %d programs each, [T, %d] bf16, medians of %d (chains of %d)\n",
      tp, tp, where, programs, o.hidden, o.iterations, o.chain);
  // Whether ranks sharing a GPU ran at once (mps_status.h): without MPS a WARNING line.
  if (!o.cpu && shared) absl::StrAppend(&r, mps_report(mps_status()));
  absl::StrAppendFormat(&r, "copy: 1 GiB device copy %.1f GB/s (read + write)\n", bandwidth / 1e9);
  absl::StrAppendFormat(&r, "%4s %10s %12s %14s %12s %12s %12s %12s %12s\n", "T", "bytes", "pushed",
                        "exchange us", "launch us", "chain us", "graph us", "copy us", "floor us");
  for (const Row& row : rows) {
    const int64_t bytes = int64_t{row.tokens} * o.hidden * 2;
    // A rank stores its partial into every rank's buffer and reads every rank's back: 2 x tp x
    // bytes moved through each GPU's memory (the links' time not counted).
    const double floor_us = 2.0 * tp * static_cast<double>(bytes) / bandwidth * 1e6;
    absl::StrAppendFormat(&r, "%4d %10d %12d %14.2f %12.2f %12.2f %12.2f %12.2f %12.3f\n",
                          row.tokens, bytes, int64_t{tp} * bytes, row.exchange_us, row.launch_us,
                          row.chain_us, row.graph_us, row.copy_us, floor_us);
    out->json_shapes.push_back(absl::StrFormat(
        "{\"tokens\": %d, \"hidden\": %d, \"bytes\": %d, \"exchange_us\": %.3f, "
        "\"launch_us\": %.3f, \"chain_us\": %.3f, \"graph_us\": %.3f, \"copy_us\": %.3f, "
        "\"floor_us\": %.3f}",
        row.tokens, o.hidden, bytes, row.exchange_us, row.launch_us, row.chain_us, row.graph_us,
        row.copy_us, floor_us));
  }
  absl::StrAppend(
      &r,
      "exchange: the GPU's global timer from the last program of any rank to start to the last to "
      "end (",
      shared ? "one GPU's clock" : "each GPU's own clock: the span holds their offset",
      "); launch: rank 0's events around its launch after a barrier through the group; chain: ",
      o.chain,
      " exchanges back to back on each rank's stream, the slowest rank's events over the count; "
      "graph: the same chain captured once and replayed; copy: a rank's partial rows into the next "
      "rank's buffer (events); floor: the exchange's "
      "bytes through each GPU's memory (stored to every buffer, read from every one) at the 1 GiB "
      "copy's rate.",
      shared && !o.cpu && tp > 1
          ? " Without MPS the driver time-slices the processes, and the times include the slices."
          : "",
      "\n");
  out->json_header =
      absl::StrCat(kernels::k3::gpu_json_header(gpu->info(), o.iterations, bandwidth,
                                                kernels::k3::L2Flush::kNone),
                   ",\n \"ranks\": ", tp, ",\n \"shared_gpu\": ", shared ? "true" : "false",
                   ",\n \"programs_each\": ", programs, ",\n \"chain\": ", o.chain);
  return "";
}

int usage(const std::string& message) {
  std::fprintf(stderr,
               "exchange_bench: %s\nusage: exchange_bench [--iterations N] [--chain N] [--tokens "
               "4,8,16] [--hidden H] [--cpu] [--gpu-index N] [--mpi] [--json FILE]\n",
               message.c_str());
  return 2;
}

// rank 0's verdict and output: the table on stdout and --json written, or why not. Returns the exit
// status.
int finish(const Options& o, const std::string& rank0, const Output& out) {
  if (rank0.rfind("skip: ", 0) == 0) {
    std::printf("exchange_bench: no GPU, nothing timed (%s)\n", rank0.substr(6).c_str());
    if (!o.json.empty() &&
        !kernels::k3::write_json_document("exchange_bench", o.json,
                                          kernels::k3::no_gpu_json_header(rank0.substr(6)), {})) {
      return 1;
    }
    return 0;
  }
  if (!rank0.empty()) return 1;
  std::fputs(out.report.c_str(), stdout);
  if (!o.json.empty() && !kernels::k3::write_json_document("exchange_bench", o.json,
                                                           out.json_header, out.json_shapes)) {
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace monotile::runtime::decode

int main(int argc, char** argv) {
  using namespace monotile::runtime::decode;  // NOLINT: a benchmark's main
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    int number = 0;
    if (arg == "--cpu") {
      o.cpu = true;
    } else if (arg == "--mpi") {
      o.mpi = true;
    } else if (arg == "--iterations" && value && absl::SimpleAtoi(value, &o.iterations) &&
               o.iterations > 0) {
      ++i;
    } else if (arg == "--chain" && value && absl::SimpleAtoi(value, &o.chain) && o.chain > 0) {
      ++i;
    } else if (arg == "--gpu-index" && value && absl::SimpleAtoi(value, &number) && number >= 0) {
      o.gpu_index = number;
      ++i;
    } else if (arg == "--json" && value) {
      o.json = value;
      ++i;
    } else if (arg == "--hidden" && value && absl::SimpleAtoi(value, &o.hidden) && o.hidden > 0 &&
               o.hidden % monotile::kernels::k3::kExchangeColumns == 0) {
      ++i;
    } else if (arg == "--tokens" && value) {
      o.tokens.clear();
      for (absl::string_view t : absl::StrSplit(value, ',')) {
        int n = 0;
        if (!absl::SimpleAtoi(t, &n) || n < 1 || n > monotile::kernels::k3::kExchangeTokens) {
          return usage(absl::StrCat("--tokens ", value, ": expected counts of rows in 1..",
                                    monotile::kernels::k3::kExchangeTokens));
        }
        o.tokens.push_back(n);
      }
      ++i;
    } else {
      return usage(absl::StrCat("unexpected \"", arg,
                                "\" (--iterations and --chain positive counts, --gpu-index a GPU's "
                                "index, --hidden a multiple of ",
                                monotile::kernels::k3::kExchangeColumns, ")"));
    }
  }
  if (o.cpu && o.gpu_index) {
    return usage(absl::StrCat("--gpu-index ", *o.gpu_index,
                              " with --cpu: expected one of them; the interpreter is one device"));
  }
  Output out;
  if (o.mpi) {
    absl::StatusOr<std::unique_ptr<Group>> group = make_mpi_group();
    if (!group.ok()) {
      std::fprintf(stderr, "exchange_bench: --mpi: %s\n",
                   std::string(group.status().message()).c_str());
      return 1;
    }
    if ((*group)->size() < 2) {
      std::fprintf(stderr,
                   "exchange_bench: --mpi with 1 rank: expected 2 or more; hint: mpirun -np 2 "
                   "exchange_bench --mpi\n");
      return 2;
    }
    const std::string verdict = run_rank(**group, o, &out);
    if (!verdict.empty() && verdict.rfind("skip: ", 0) != 0) {
      std::fprintf(stderr, "exchange_bench: rank %d: %s\n", (*group)->rank(), verdict.c_str());
    }
    if ((*group)->rank() != 0) return verdict.empty() || verdict.rfind("skip: ", 0) == 0 ? 0 : 1;
    return finish(o, verdict, out);
  }
  const ForkedRanks ranks =
      run_forked_ranks([&](Group& group) { return run_rank(group, o, &out); });
  if (ranks.rank0.rfind("skip: ", 0) != 0 &&
      (!ranks.rank0.empty() || !ranks.rank1.empty() || !ranks.rank1_exited)) {
    std::fprintf(stderr, "exchange_bench: rank 0: %s; rank 1: %s%s\n",
                 ranks.rank0.empty() ? "ok" : ranks.rank0.c_str(),
                 ranks.rank1.empty() ? "ok" : ranks.rank1.c_str(),
                 ranks.rank1_exited ? "" : " (did not exit normally)");
    return 1;
  }
  return finish(o, ranks.rank0, out);
}
