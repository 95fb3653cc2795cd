// exchange_bench: the time K2's reduction across TP ranks takes by itself (the exchange probe,
// kernels/k3/exchange_probe.h) at [T, H] bf16, two ranks as two processes on the first GPU
// (run_forked_ranks: forked before either touches the driver, their group a socket pair), each with
// half the GPU's SMs (at most one program a 64-column share). Per T: the bytes a rank hands in, the
// exchange's time by the GPU's global timer (from the last program of either rank to start to the
// last to end; the ranks share the GPU's clock), each launch's time by events on rank 0 (after a
// barrier through the group), and the copy floor measured in the same run: a device copy of the
// rank's partial rows into the other rank's buffer (events), and the 1 GiB copy's bandwidth.
// Medians over --iterations. The ranks' reduced rows must agree bit for bit. Two processes on one
// GPU without MPS are time-sliced by the driver: the times then include the slices, and the output
// says whether an MPS control daemon serves the GPU (a WARNING line without one). Without a GPU
// it says why and exits 0; --cpu runs it on the CPU interpreter instead (two processes there too,
// their peer buffers shared memory), a check of the benchmark itself whose times are not a GPU's.
// usage: exchange_bench [--iterations N] [--tokens 4,8,16] [--hidden H] [--cpu]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
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
#include "runtime/decode/mps_status.h"
#include "runtime/decode/socket_pair_group.h"
#include "runtime/discovery.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {
namespace {

struct Options {
  bool cpu = false;  // the CPU interpreter: a check of the benchmark itself, not a GPU's times
  int iterations = 50;
  std::vector<int> tokens = {4, 8, 16};
  int64_t hidden = 7168;
};

// One T's numbers.
struct Row {
  int tokens = 0;
  double exchange_us = 0, launch_us = 0, copy_us = 0;
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

// One rank: "" with rank 0's table in `report`, "skip: <why>" without a GPU, else what failed.
std::string run_rank(Group& group, const Options& o, std::string* report) {
  Discovery found = discover_devices();
  std::unique_ptr<Device> gpu;
  for (std::unique_ptr<Device>& device : found.devices) {
    if ((device->info().vendor != dsl::Vendor::kCpu) != o.cpu && !gpu) gpu = std::move(device);
  }
  // The other rank decides the same (one GPU for both): neither enters the group's collectives.
  if (!gpu) return absl::StrCat("skip: ", no_gpu_reason(found));
  const int shares = static_cast<int>(o.hidden / kernels::k3::kExchangeColumns);
  const int programs = o.cpu ? 2 : std::max(1, std::min(shares, gpu->info().compute_units / 2));
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
    if (!status.ok()) return absl::StrCat("T ", t, ": ", status.message());
    // The ranks' reduced rows, bit for bit.
    absl::StatusOr<std::vector<uint16_t>> out = probe.reduced(t);
    if (!out.ok()) return std::string(out.status().message());
    absl::StatusOr<std::vector<std::string>> both =
        group.all_gather(std::string(reinterpret_cast<const char*>(out->data()), out->size() * 2));
    if (!both.ok()) return std::string(both.status().message());
    if ((*both)[0] != (*both)[1]) return absl::StrCat("T ", t, ": the ranks' reduced rows differ");
    // The copy floor: this rank's partial rows into the other rank's buffer, one rank at a time.
    for (int turn = 0; turn < 2; ++turn) {
      if (absl::Status s = barrier(group); !s.ok()) return std::string(s.message());
      if (turn != group.rank()) continue;
      for (int i = 0; i < o.iterations + 3; ++i) {
        absl::StatusOr<float> ms = timed(*gpu, *stream, [&] {
          return gpu->copy_on_device_async(probe.peer(1 - group.rank()), probe.source(),
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
  if (group.rank() != 0) return barrier(group).ok() ? "" : "the other rank left";
  absl::StatusOr<kernels::k3::Timing> big = kernels::k3::copy_floor(*gpu, *stream, o.cpu ? 1 : 10);
  if (absl::Status s = barrier(group); !s.ok()) return std::string(s.message());
  if (!big.ok()) return std::string(big.status().message());
  const double bandwidth = kernels::k3::copy_bandwidth(*big);
  std::string& r = *report;
  absl::StrAppendFormat(
      &r,
      "exchange_bench: K2's reduction across 2 ranks alone (the exchange probe), 2 processes on "
      "%s, %d programs each, [T, %d] bf16, medians of %d\n",
      describe(gpu->info()), programs, o.hidden, o.iterations);
  // Whether the two processes ran at once (mps_status.h): without MPS a WARNING line.
  if (!o.cpu) absl::StrAppend(&r, mps_report(mps_status()));
  absl::StrAppendFormat(&r, "copy: 1 GiB device copy %.1f GB/s (read + write)\n", bandwidth / 1e9);
  absl::StrAppendFormat(&r, "%4s %10s %12s %14s %12s %12s %12s\n", "T", "bytes", "pushed",
                        "exchange us", "launch us", "copy us", "floor us");
  for (const Row& row : rows) {
    const int64_t bytes = int64_t{row.tokens} * o.hidden * 2;
    // A rank stores its partial into both buffers and reads both ranks' back: 4 x bytes moved.
    const double floor_us = 4.0 * static_cast<double>(bytes) / bandwidth * 1e6;
    absl::StrAppendFormat(&r, "%4d %10d %12d %14.2f %12.2f %12.2f %12.3f\n", row.tokens, bytes,
                          2 * bytes, row.exchange_us, row.launch_us, row.copy_us, floor_us);
  }
  absl::StrAppend(
      &r,
      "exchange: the GPU's global timer from the last program of either rank to start to the last "
      "to "
      "end; launch: rank 0's events around its launch after a barrier through the group; copy: "
      "rank "
      "0's partial rows into rank 1's buffer (events); floor: the exchange's bytes (stored to both "
      "buffers, read from both) at the 1 GiB copy's rate. Without MPS the driver time-slices the "
      "two "
      "processes, and the times include the slices.\n");
  return "";
}

int usage(const std::string& message) {
  std::fprintf(stderr,
               "exchange_bench: %s\nusage: exchange_bench [--iterations N] [--tokens 4,8,16] "
               "[--hidden H] [--cpu]\n",
               message.c_str());
  return 2;
}

}  // namespace
}  // namespace monotile::runtime::decode

int main(int argc, char** argv) {
  using namespace monotile::runtime::decode;  // NOLINT: a benchmark's main
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (arg == "--cpu") {
      o.cpu = true;
    } else if (arg == "--iterations" && value && absl::SimpleAtoi(value, &o.iterations) &&
               o.iterations > 0) {
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
                                "\" (--iterations a positive count, --hidden a multiple of ",
                                monotile::kernels::k3::kExchangeColumns, ")"));
    }
  }
  std::string report;
  const ForkedRanks ranks =
      run_forked_ranks([&](Group& group) { return run_rank(group, o, &report); });
  if (ranks.rank0.rfind("skip: ", 0) == 0) {
    std::printf("exchange_bench: no GPU, nothing timed (%s)\n", ranks.rank0.substr(6).c_str());
    return 0;
  }
  if (!ranks.rank0.empty() || !ranks.rank1.empty() || !ranks.rank1_exited) {
    std::fprintf(stderr, "exchange_bench: rank 0: %s; rank 1: %s%s\n",
                 ranks.rank0.empty() ? "ok" : ranks.rank0.c_str(),
                 ranks.rank1.empty() ? "ok" : ranks.rank1.c_str(),
                 ranks.rank1_exited ? "" : " (did not exit normally)");
    return 1;
  }
  std::fputs(report.c_str(), stdout);
  return 0;
}
