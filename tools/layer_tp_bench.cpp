// layer_tp_bench: the time K2's exchanges add to a layer at TP 2 on one GPU. Two layers of the
// model (default k3; k3-tiny with --cpu): a KDA layer (K1 then K2) and an MLA layer's FFN (K2 on
// the attention output given), each run
//   - at TP 2: two processes on the first GPU (run_forked_ranks: forked before either touches the
//     driver, their group a socket pair), each rank's weights and step its shards of one TP 1
//     step (layer_steps.h), K2 exchanging over the ranks' peer buffers, each grid half the SMs;
//   - at TP 1: one process, the whole layer on the same step, its grids half the SMs too,
// and per layer prints the bytes each moves (layer_bytes, the experts the route chose), the time
// of K1 + K2 by events (median, min and max over --iterations, each launch after a 256 MiB read
// that leaves L2 cold, l2_flush.h; at TP 2 each iteration the slower rank's time, both ranks
// launching after a barrier through the group), the HBM floor (bytes at the 1 GiB copy's bandwidth
// of the same run) and the ratio, then "exchange cost = TP 2 - TP 1 (half SMs)".
// Nothing is timed unchecked: the first launch of each run is held to its reference and the timed
// launches' outputs to the first's, bit for bit: both ranks' replicated outputs must be equal bit
// for bit, TP 1's outputs pass `monotile layer run --check`'s table against the float64 reference,
// and TP 2's outputs (each rank's caches and core against TP 1's slices) are within a bound of TP
// 1's; otherwise it prints what differs and exits 1 without the times.
// Two processes on one GPU without NVIDIA MPS are time-sliced, never concurrent: the output says
// whether an MPS control daemon serves the GPU (runtime/decode/mps_status.h), and without one
// prints a WARNING that the TP 2 times include context switches and that the difference is not the
// exchanges' cost. Without a GPU it says why and exits 0; --cpu runs it on the CPU interpreter (the
// ranks two processes there too, their peer buffers shared memory), a check of the benchmark itself
// whose times are not a GPU's. usage: layer_tp_bench [--cpu] [--model k3|k3-tiny] [--kda-layer L]
// [--ffn-layer L]
//                       [--requests N] [--q Q] [--iterations N] [--seed S] [--experts N]
//                       [--flush read|write] [--ranks-alone]
// --ranks-alone: a check of the checks: each TP 2 rank's K2 reduces its own partials alone (the
// other's stood in by zero), so that the outputs are wrong, and the run must fail without times.
// --experts N: the model's first N routed experts only (num_experts N), so that a k3 run makes and
// uploads fewer seeded MXFP4 bytes (896 experts are 15 GB a layer at TP 1); the rows then choose
// among fewer experts, and the table's bytes count those chosen.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "dsl/target.h"
#include "kernels/k3/bench_timing.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/k1_check.h"
#include "kernels/k3/k2.h"
#include "kernels/k3/l2_flush.h"
#include "kernels/k3/peer_exchange.h"
#include "model/dtype.h"
#include "runtime/decode/mps_status.h"
#include "runtime/decode/peer_buffer.h"
#include "runtime/decode/socket_pair_group.h"
#include "runtime/discovery.h"
#include "support/status_macros.h"
#include "tools/decode_layer_bytes.h"
#include "tools/layer_check.h"
#include "tools/layer_launch.h"
#include "tools/layer_steps.h"
#include "tools/layer_weights.h"

namespace monotile::tools {
namespace {

using runtime::decode::Group;

constexpr int kWarmups = 2;

struct Options {
  bool cpu = false;  // the CPU interpreter: a check of the benchmark itself, not a GPU's times
  std::string model;
  int kda_layer = 1, ffn_layer = 3;
  int requests = 2, q = 4;
  int iterations = 20;
  uint64_t seed = 1;
  std::optional<int> experts;  // the model's first N routed experts only (fewer seeded bytes)
  bool ranks_alone = false;    // a check of the checks: TP 2's K2 without its exchanges
  kernels::k3::L2Flush flush = kernels::k3::L2Flush::kRead;
};

// One layer's runs: the TP 1 layer, and rank r's part of it at TP 2, on the same step.
struct LayerCase {
  std::string label;  // "KDA layer 1 (K1 + K2)"
  LayerModel whole;
  LayerShape whole_shape;
  LayerStep whole_step;
  std::vector<LayerModel> ranks;  // TP 2: rank 0, rank 1
  std::vector<LayerShape> rank_shapes;
  std::vector<LayerStep> rank_steps;
};

// Per iteration times (us) of one run, and its bytes.
struct RunTimes {
  std::vector<double> us;
  double bytes = 0;
};

absl::StatusOr<LayerCase> make_case(const Options& o, int layer) {
  LayerCase c;
  MT_ASSIGN_OR_RETURN(
      c.whole, open_layer_model(o.model, o.seed, 1, 0, layer, LayerStage::kLayer, o.experts));
  const bool kda = c.whole.kda();
  c.label = absl::StrCat(kda ? "KDA" : "MLA", " layer ", layer, kda ? " (K1 + K2)" : " (FFN: K2)");
  c.whole_shape = layer_shape(c.whole.config, c.whole.dims, c.whole.runs_k1(), c.whole.runs_k2(),
                              c.whole.core_width());
  const RandomStep random{.requests = o.requests,
                          .q = o.q,
                          .state_len = o.q + 2,
                          .slots = int64_t{o.requests} * o.q + 3,
                          .seed = o.seed + static_cast<uint64_t>(layer)};
  c.whole_step = random_layer_step(c.whole_shape, random);
  for (int r = 0; r < 2; ++r) {
    MT_ASSIGN_OR_RETURN(LayerModel m, open_layer_model(o.model, o.seed, 2, r, layer,
                                                       LayerStage::kLayer, o.experts));
    c.rank_shapes.push_back(
        layer_shape(m.config, m.dims, m.runs_k1(), m.runs_k2(), m.core_width()));
    c.rank_steps.push_back(rank_layer_step(c.whole_step, c.whole_shape, c.rank_shapes.back(), r));
    c.ranks.push_back(std::move(m));
  }
  return c;
}

// The programs of every run of `cases` on `target`, once each by name: TP 1's and both ranks'.
absl::StatusOr<std::vector<dsl::Program>> layer_programs(const std::vector<LayerCase>& cases,
                                                         const dsl::Target& target,
                                                         bool exchanging) {
  std::vector<dsl::Program> programs;
  std::set<std::string> names;
  auto add = [&](const LayerModel& m, const LayerStep& step, const LayerShape& shape,
                 bool exchanges) -> absl::Status {
    MT_ASSIGN_OR_RETURN(LayerBuilds b, layer_builds(m, step, shape, target, false, exchanges));
    if (b.k1 && names.insert(kernels::k3::k1_name(*b.k1)).second) {
      programs.push_back(kernels::k3::k1_program(*b.k1));
    }
    if (b.k2 && names.insert(kernels::k3::k2_name(*b.k2)).second) {
      programs.push_back(kernels::k3::k2_program(*b.k2));
    }
    return absl::OkStatus();
  };
  for (const LayerCase& c : cases) {
    MT_RETURN_IF_ERROR(add(c.whole, c.whole_step, c.whole_shape, false));
    for (size_t r = 0; r < c.ranks.size(); ++r) {
      MT_RETURN_IF_ERROR(add(c.ranks[r], c.rank_steps[r], c.rank_shapes[r], exchanging));
    }
  }
  return programs;
}

// Values appended to and read back from bytes, in order: outputs sent through the group.
class Packer {
 public:
  template <typename T>
  void put(const std::vector<T>& v) {
    const uint64_t n = v.size();
    bytes_.append(reinterpret_cast<const char*>(&n), sizeof n);
    bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class Unpacker {
 public:
  explicit Unpacker(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  std::vector<T> get() {
    uint64_t n = 0;
    std::memcpy(&n, bytes_.data() + at_, sizeof n);
    at_ += sizeof n;
    std::vector<T> v(n);
    std::memcpy(v.data(), bytes_.data() + at_, n * sizeof(T));
    at_ += n * sizeof(T);
    return v;
  }

 private:
  const std::string& bytes_;
  size_t at_ = 0;
};

// The outputs every rank holds the same (K2's reductions sum in one rank order).
std::string replicated(const LayerOutputs& out) {
  Packer p;
  p.put(out.prefix);
  p.put(out.blocks);
  p.put(out.x);
  p.put(out.a);
  p.put(out.y);
  p.put(out.out);
  p.put(out.route_experts);
  p.put(out.route_weights);
  return p.bytes();
}

// Every output, for rank 0 to compare a rank's with TP 1's.
std::string everything(const LayerOutputs& out) {
  Packer p;
  p.put(out.prefix);
  p.put(out.blocks);
  p.put(out.x);
  p.put(out.core);
  p.put(out.conv_state);
  p.put(out.recurrent_state);
  p.put(out.a);
  p.put(out.y);
  p.put(out.out);
  p.put(out.route_experts);
  p.put(out.route_weights);
  return p.bytes();
}

LayerOutputs unpack_everything(const std::string& bytes) {
  Unpacker u(bytes);
  LayerOutputs out;
  out.prefix = u.get<uint16_t>();
  out.blocks = u.get<uint16_t>();
  out.x = u.get<uint16_t>();
  out.core = u.get<uint16_t>();
  out.conv_state = u.get<uint16_t>();
  out.recurrent_state = u.get<float>();
  out.a = u.get<uint16_t>();
  out.y = u.get<uint16_t>();
  out.out = u.get<uint16_t>();
  out.route_experts = u.get<int32_t>();
  out.route_weights = u.get<float>();
  return out;
}

absl::Status barrier(Group& group) {
  return group.all_gather("").status();
}

// The distinct experts the step's rows chose.
double distinct_experts(const LayerOutputs& out) {
  std::vector<int32_t> ids = out.route_experts;
  std::sort(ids.begin(), ids.end());
  return static_cast<double>(std::unique(ids.begin(), ids.end()) - ids.begin());
}

double bytes_moved(const LayerModel& m, const LayerStep& step, double chosen) {
  return layer_bytes(m.config, m.plan, m.dims,
                     {.requests = step.requests,
                      .q = step.q,
                      .conv_state_len = step.state_len,
                      .mla_context = 0,
                      .chosen_experts = chosen})
      .total();
}

// One run's launches on `device`: a checked first launch (outputs poisoned before), then kWarmups
// + iterations timed ones, each after restoring the step's inputs and the flush; with `group`
// (TP 2) every launch after a barrier, every rank giving it the same epoch. `first` and `last`:
// the first launch's outputs and the last timed one's.
absl::Status run_layer_launches(LayerLaunch& layer, runtime::Device& device, Group* group,
                                const kernels::k3::L2Flusher& flusher, int iterations,
                                LayerOutputs& first, LayerOutputs& last, std::vector<double>& us) {
  MT_ASSIGN_OR_RETURN(runtime::Stream stream, device.create_stream());
  int32_t epoch = 0;
  auto launch = [&](bool timed, int i) -> absl::StatusOr<float> {
    MT_RETURN_IF_ERROR(layer.restore(stream));
    if (timed) MT_RETURN_IF_ERROR(flusher.run(device, stream, i));
    MT_RETURN_IF_ERROR(device.synchronize(stream));
    MT_RETURN_IF_ERROR(layer.set_epoch(++epoch));
    if (group != nullptr) MT_RETURN_IF_ERROR(barrier(*group));
    MT_ASSIGN_OR_RETURN(runtime::Event start, device.create_event());
    MT_ASSIGN_OR_RETURN(runtime::Event end, device.create_event());
    MT_RETURN_IF_ERROR(device.record(start, stream));
    if (layer.runs_k1()) MT_RETURN_IF_ERROR(layer.launch_k1(stream));
    MT_RETURN_IF_ERROR(layer.launch_k2(stream));
    MT_RETURN_IF_ERROR(device.record(end, stream));
    MT_RETURN_IF_ERROR(device.synchronize(end));
    // Neither rank's next restore and flush runs beside the other's layer still in flight.
    if (group != nullptr) MT_RETURN_IF_ERROR(barrier(*group));
    MT_RETURN_IF_ERROR(layer.check_health());
    return device.elapsed_ms(start, end);
  };
  MT_RETURN_IF_ERROR(layer.poison());
  MT_RETURN_IF_ERROR(launch(false, 0).status());
  MT_ASSIGN_OR_RETURN(first, layer.outputs());
  for (int i = 0; i < kWarmups + iterations; ++i) {
    MT_ASSIGN_OR_RETURN(float ms, launch(true, i));
    if (i >= kWarmups) us.push_back(ms * 1e3);
  }
  MT_ASSIGN_OR_RETURN(last, layer.outputs());
  return absl::OkStatus();
}

// Columns [first, first + count) of each row of `columns` values.
template <typename T>
std::vector<T> columns_of(const std::vector<T>& whole, int64_t columns, int64_t first,
                          int64_t count) {
  std::vector<T> out;
  for (size_t r = 0; r * static_cast<size_t>(columns) < whole.size(); ++r) {
    auto from = whole.begin() + static_cast<int64_t>(r) * columns + first;
    out.insert(out.end(), from, from + count);
  }
  return out;
}

std::vector<double> widened(const std::vector<uint16_t>& bits) {
  std::vector<double> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = model::bf16_to_float(bits[i]);
  return out;
}

std::vector<double> widened(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

// TP 2's rank `rank` against TP 1 on the same step. Both hold their own rounding of the same sums
// (a rank's partials are rounded to bf16 before the exchange), so the bound is loose against the
// float64 reference's own rules (TP 1 passes those): |TP 2 - TP 1| within 1/16 of TP 1's RMS, the
// MoE output within 1/8 on the rows both route alike, and most rows routed alike. A reduction that
// missed a rank's partial errs by about the partial's size, far past them. Returns the failures.
std::vector<std::string> compare_with_tp1(const LayerCase& c, int rank, const LayerOutputs& tp2,
                                          const LayerOutputs& tp1, std::string& table) {
  std::vector<std::string> failures;
  const LayerShape& whole = c.whole_shape;
  const LayerShape& mine = c.rank_shapes[static_cast<size_t>(rank)];
  const int64_t tokens = c.whole_step.tokens(), h = whole.hidden, k = whole.top_k;
  auto compare = [&](const std::string& name, const std::vector<double>& got,
                     const std::vector<double>& want, double share) {
    kernels::k3::CheckRule rule;
    rule.abs_share = share;
    const kernels::k3::OutputCheck check =
        kernels::k3::check_output(name, got, want, {static_cast<int64_t>(want.size())}, rule);
    absl::StrAppendFormat(&table, "  rank %d %-16s %10d %9d %10.2e %10.2e  %s (bound %g x RMS)\n",
                          rank, name, check.compared, check.differing, check.worst_rms,
                          check.error_rms, check.passed() ? "pass" : "FAIL", share);
    if (!check.passed()) failures.push_back(absl::StrCat("rank ", rank, " ", check.first_failure));
  };
  compare("prefix", widened(tp2.prefix), widened(tp1.prefix), 1.0 / 16);
  compare("a", widened(tp2.a), widened(tp1.a), 1.0 / 16);
  compare("y", widened(tp2.y), widened(tp1.y), 1.0 / 16);
  if (whole.attention) {
    compare("blocks", widened(tp2.blocks), widened(tp1.blocks), 1.0 / 16);
    compare("x", widened(tp2.x), widened(tp1.x), 1.0 / 16);
    compare(
        "core", widened(tp2.core),
        widened(columns_of(tp1.core, whole.projection, rank * mine.projection, mine.projection)),
        1.0 / 16);
    LayerStep after = c.whole_step;
    after.conv_state = tp1.conv_state;
    after.recurrent_state = tp1.recurrent_state;
    const LayerStep sliced = rank_layer_step(after, whole, mine, rank);
    compare("conv_state", widened(tp2.conv_state), widened(sliced.conv_state), 1.0 / 16);
    compare("recurrent_state", widened(tp2.recurrent_state), widened(sliced.recurrent_state),
            1.0 / 16);
  }
  std::vector<double> got_m, want_m;
  int64_t alike = 0;
  for (int64_t t = 0; t < tokens; ++t) {
    if (!std::equal(tp2.route_experts.begin() + t * k, tp2.route_experts.begin() + (t + 1) * k,
                    tp1.route_experts.begin() + t * k)) {
      continue;
    }
    ++alike;
    for (int64_t i = 0; i < h; ++i) {
      got_m.push_back(model::bf16_to_float(tp2.out[static_cast<size_t>(t * h + i)]));
      want_m.push_back(model::bf16_to_float(tp1.out[static_cast<size_t>(t * h + i)]));
    }
  }
  absl::StrAppendFormat(&table, "  rank %d %-16s %10d rows of %d routed as at TP 1\n", rank,
                        "route", alike, tokens);
  if (alike * 2 < tokens) {
    failures.push_back(absl::StrCat("rank ", rank, ": only ", alike, " of ", tokens,
                                    " rows route as at TP 1, expected most (near-ties are rare)"));
  }
  if (alike > 0) compare("out", got_m, want_m, 1.0 / 8);
  return failures;
}

std::string outputs_differ(const std::string& what, const LayerOutputs& a, const LayerOutputs& b) {
  return replicated(a) == replicated(b) && a.core == b.core && a.conv_state == b.conv_state &&
                 a.recurrent_state == b.recurrent_state
             ? ""
             : what;
}

struct Stats {
  double median = 0, min = 0, max = 0;
};

Stats stats_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? Stats{} : Stats{v[v.size() / 2], v.front(), v.back()};
}

// One layer at TP 2 (every rank) and, on rank 0, at TP 1. Rank 0 prints the checks as it goes and
// returns the rows' times in `tp1` and `tp2`; "" when every check passed, else what failed.
std::string run_case(Group& group, runtime::Device& device, const Options& o, const LayerCase& c,
                     int programs, const kernels::k3::L2Flusher& flusher, RunTimes& tp1,
                     RunTimes& tp2) {
  const int rank = group.rank();
  LayerOutputs first2, last2;
  std::vector<double> mine;
  {
    // TP 2: this rank's shards, K2 exchanging over the group's peer buffers.
    absl::StatusOr<std::unique_ptr<runtime::decode::PeerBuffer>> peers =
        runtime::decode::PeerBuffer::create(
            device, group,
            static_cast<size_t>(
                kernels::k3::peer_exchange_layout(2, c.whole.config.hidden_size,
                                                  c.whole.config.routed_expert_hidden_size)
                    .bytes()));
    if (!peers.ok()) return std::string(peers.status().message());
    LayerLaunchOptions options{.programs = programs, .peers = {}};
    if (!o.ranks_alone) options.peers = {(*peers)->address(0), (*peers)->address(1)};
    absl::StatusOr<std::unique_ptr<LayerLaunch>> layer = LayerLaunch::create(
        c.ranks[static_cast<size_t>(rank)], c.rank_steps[static_cast<size_t>(rank)],
        c.rank_shapes[static_cast<size_t>(rank)], device, options);
    absl::Status status = layer.status();
    // Both ranks made theirs before either launches (a rank refused leaves the other waiting).
    absl::StatusOr<std::vector<std::string>> made = group.all_gather(status.ok() ? "" : "refused");
    if (!made.ok()) return std::string(made.status().message());
    if (!status.ok()) return absl::StrCat("TP 2 rank ", rank, ": ", status.message());
    if ((*made)[static_cast<size_t>(1 - rank)] != "") return "the other rank refused its layer";
    if (rank == 0) {
      std::printf("%s: TP 2, K1 %d and K2 %d programs a rank\n", c.label.c_str(),
                  (*layer)->k1_programs(), (*layer)->k2_programs());
      std::fflush(stdout);
    }
    status =
        run_layer_launches(**layer, device, &group, flusher, o.iterations, first2, last2, mine);
    // No rank frees its buffer while the other may still write into it.
    absl::Status after = barrier(group);
    if (!status.ok()) return absl::StrCat("TP 2 rank ", rank, ": ", status.message());
    if (!after.ok()) return std::string(after.message());
  }
  // The ranks' replicated outputs, bit for bit, at the checked launch and the last timed one.
  for (const LayerOutputs* outputs : {&first2, &last2}) {
    absl::StatusOr<std::vector<std::string>> both = group.all_gather(replicated(*outputs));
    if (!both.ok()) return std::string(both.status().message());
    if ((*both)[0] != (*both)[1]) {
      return absl::StrCat(c.label, ": the TP 2 ranks' outputs differ (",
                          outputs == &first2 ? "the checked launch" : "the last timed launch", ")");
    }
  }
  std::string mismatch = outputs_differ(
      "the last timed launch's outputs differ from the checked "
      "launch's",
      first2, last2);
  // Every rank's outputs and times to rank 0.
  absl::StatusOr<std::vector<std::string>> all = group.all_gather(everything(first2));
  if (!all.ok()) return std::string(all.status().message());
  Packer packed;
  packed.put(mine);
  absl::StatusOr<std::vector<std::string>> times = group.all_gather(packed.bytes());
  if (!times.ok()) return std::string(times.status().message());
  absl::StatusOr<std::vector<std::string>> verdicts = group.all_gather(mismatch);
  if (!verdicts.ok()) return std::string(verdicts.status().message());
  if (rank != 0) return barrier(group).ok() ? "" : "rank 0 left";

  std::string failed;
  for (int r = 0; r < 2; ++r) {
    if (!(*verdicts)[static_cast<size_t>(r)].empty()) {
      failed = absl::StrCat(c.label, ": TP 2 rank ", r, ": ", (*verdicts)[static_cast<size_t>(r)]);
    }
  }
  std::vector<LayerOutputs> ranks = {unpack_everything((*all)[0]), unpack_everything((*all)[1])};
  const std::vector<double> us0 = Unpacker((*times)[0]).get<double>(),
                            us1 = Unpacker((*times)[1]).get<double>();
  for (size_t i = 0; i < us0.size() && i < us1.size(); ++i) {
    tp2.us.push_back(std::max(us0[i], us1[i]));
  }
  const double chosen = distinct_experts(first2);
  tp2.bytes = bytes_moved(c.ranks[0], c.rank_steps[0], chosen) +
              bytes_moved(c.ranks[1], c.rank_steps[1], chosen);

  // TP 1: the whole layer on the same step, half the SMs, while rank 1 waits at the barrier.
  LayerOutputs first1, last1;
  {
    absl::StatusOr<std::unique_ptr<LayerLaunch>> layer = LayerLaunch::create(
        c.whole, c.whole_step, c.whole_shape, device, {.programs = programs, .peers = {}});
    absl::Status status = layer.status();
    if (status.ok()) {
      std::printf("%s: TP 1, K1 %d and K2 %d programs\n", c.label.c_str(), (*layer)->k1_programs(),
                  (*layer)->k2_programs());
      std::fflush(stdout);
      status = run_layer_launches(**layer, device, nullptr, flusher, o.iterations, first1, last1,
                                  tp1.us);
    }
    if (!status.ok()) {
      (void)barrier(group);
      return absl::StrCat(c.label, ": TP 1: ", status.message());
    }
  }
  tp1.bytes = bytes_moved(c.whole, c.whole_step, distinct_experts(first1));
  if (std::string differ = outputs_differ("TP 1: the last timed launch's outputs differ from the "
                                          "checked launch's",
                                          first1, last1);
      !differ.empty()) {
    failed = absl::StrCat(c.label, ": ", differ);
  }
  std::printf("%s: TP 1 ", c.label.c_str());
  std::fflush(stdout);
  absl::StatusOr<bool> passed = check_layer(c.whole, c.whole_step, c.whole_shape, first1);
  if (!passed.ok()) failed = absl::StrCat(c.label, ": TP 1's check: ", passed.status().message());
  if (passed.ok() && !*passed) failed = absl::StrCat(c.label, ": TP 1 fails its check");
  std::string table = absl::StrFormat(
      "%s: TP 2 against TP 1 (the ranks' replicated outputs equal bit for bit):\n  %6s %-16s %10s "
      "%9s %10s %10s  verdict\n",
      c.label, "", "output", "values", "differ", "worst/RMS", "error RMS");
  for (int r = 0; r < 2; ++r) {
    for (const std::string& f :
         compare_with_tp1(c, r, ranks[static_cast<size_t>(r)], first1, table)) {
      failed = absl::StrCat(c.label, ": TP 2 against TP 1: ", f);
    }
  }
  std::fputs(table.c_str(), stdout);
  std::fflush(stdout);
  absl::Status released = barrier(group);
  if (!failed.empty()) return failed;
  return released.ok() ? "" : std::string(released.message());
}

// One rank: "" (rank 0's table printed), "skip: <why>" without a GPU, else what failed.
std::string run_rank(Group& group, const Options& o) {
  runtime::Discovery found = runtime::discover_devices();
  std::unique_ptr<runtime::Device> device;
  for (std::unique_ptr<runtime::Device>& d : found.devices) {
    if ((d->info().vendor != dsl::Vendor::kCpu) != o.cpu && !device) device = std::move(d);
  }
  // The other rank decides the same (one GPU for both): neither enters the group's collectives.
  if (!device) return absl::StrCat("skip: ", runtime::no_gpu_reason(found));
  // Half the GPU's SMs a rank (their two grids resident at once), and TP 1 the same half; on the
  // interpreter half its 8 programs.
  std::vector<LayerCase> cases;
  for (int layer : {o.kda_layer, o.ffn_layer}) {
    absl::StatusOr<LayerCase> made = make_case(o, layer);
    if (!made.ok()) return std::string(made.status().message());
    cases.push_back(std::move(*made));
  }
  if (!o.cpu && group.rank() == 0) {
    // Every build of the runs compiled first on every core (rank 1 waits in the group meanwhile,
    // then finds its builds in the cache): one after another they take NVRTC seconds each.
    absl::StatusOr<std::vector<dsl::Program>> programs =
        layer_programs(cases, device->info().target, !o.ranks_alone);
    if (!programs.ok()) return std::string(programs.status().message());
    kernels::k3::precompile(*programs, device->info().target);
  }
  const int programs = o.cpu ? 4 : std::max(1, device->info().compute_units / 2);
  absl::StatusOr<kernels::k3::L2Flusher> flusher =
      kernels::k3::L2Flusher::create(*device, o.cpu ? kernels::k3::L2Flush::kNone : o.flush);
  if (!flusher.ok()) return std::string(flusher.status().message());
  const bool lead = group.rank() == 0;
  runtime::decode::MpsStatus mps;
  if (lead) {
    mps = runtime::decode::mps_status();
    std::printf(
        "layer_tp_bench: %s, %d requests x q %d (%d rows), on %s (%d compute units): each layer at "
        "TP 2 (2 processes, %d programs each) and at TP 1 (%d programs: the same half of the "
        "SMs)\n",
        cases.front().whole.weights.c_str(), o.requests, o.q, o.requests * o.q,
        runtime::describe(device->info()).c_str(), device->info().compute_units, programs,
        programs);
    if (o.cpu) {
      std::printf(
          "the CPU interpreter: the ranks are processes on the CPU; a check of the "
          "benchmark, not a GPU's times\n");
    } else {
      std::fputs(runtime::decode::mps_report(mps).c_str(), stdout);
    }
    std::fflush(stdout);
  }
  std::vector<RunTimes> tp1(cases.size()), tp2(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string verdict =
        run_case(group, *device, o, cases[i], programs, *flusher, tp1[i], tp2[i]);
    if (!verdict.empty()) return verdict;
  }
  if (!lead) return "";
  absl::StatusOr<runtime::Stream> stream = device->create_stream();
  if (!stream.ok()) return std::string(stream.status().message());
  absl::StatusOr<kernels::k3::Timing> copy =
      kernels::k3::copy_floor(*device, *stream, o.cpu ? 1 : 10);
  if (!copy.ok()) return std::string(copy.status().message());
  const double bandwidth = kernels::k3::copy_bandwidth(*copy);
  std::printf(
      "every check passed; L2: %s; %d iterations after %d warm-ups\n",
      o.cpu ? "no flush on the interpreter" : kernels::k3::l2_flush_description(o.flush).c_str(),
      o.iterations, kWarmups);
  std::printf("copy: 1 GiB device copy %.1f GB/s (read + write)\n", bandwidth / 1e9);
  std::printf("%-24s %-20s %12s %11s %10s %10s %10s %7s\n", "layer", "run", "bytes", "median us",
              "min us", "max us", "floor us", "ratio");
  const bool sliced = !o.cpu && !mps.daemon;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Stats one = stats_of(tp1[i].us), two = stats_of(tp2[i].us);
    auto row = [&](const char* run, const RunTimes& t, const Stats& s) {
      const double floor_us = t.bytes / bandwidth * 1e6;
      std::printf("%-24s %-20s %12.0f %11.2f %10.2f %10.2f %10.2f %7.2f\n", cases[i].label.c_str(),
                  run, t.bytes, s.median, s.min, s.max, floor_us, s.median / floor_us);
    };
    row("TP 1 (half SMs)", tp1[i], one);
    row(sliced ? "TP 2 (time-sliced)" : "TP 2 (2 processes)", tp2[i], two);
    std::printf(
        "%-24s exchange cost = TP 2 - TP 1 (half SMs) = %+.2f us (medians), %+.1f%% of TP 1%s\n",
        cases[i].label.c_str(), two.median - one.median,
        one.median > 0 ? 100.0 * (two.median - one.median) / one.median : 0.0,
        o.cpu    ? " (the interpreter: not a GPU's)"
        : sliced ? " (WARNING: time-sliced without MPS: context switches, not the exchanges' "
                   "cost)"
                 : "");
  }
  std::printf(
      "bytes: the weights the layer reads (the routed experts' for the distinct experts its rows "
      "chose), its states' slots read and written and its activations, at TP 2 both ranks' (one "
      "HBM); floor: those bytes at the 1 GiB copy's rate; TP 2's time each iteration the slower "
      "rank's, by events around its K1 + K2 after a barrier through the group (a socket pair: "
      "the ranks' launches may start its round trip apart)\n");
  return "";
}

int usage(const std::string& message) {
  std::fprintf(stderr,
               "layer_tp_bench: %s\nusage: layer_tp_bench [--cpu] [--model k3|k3-tiny] "
               "[--kda-layer L] [--ffn-layer L] [--requests N] [--q Q] [--iterations N] [--seed S] "
               "[--experts N] [--flush read|write] [--ranks-alone]\n",
               message.c_str());
  return 2;
}

}  // namespace
}  // namespace monotile::tools

int main(int argc, char** argv) {
  using namespace monotile::tools;  // NOLINT: a benchmark's main
  Options o;
  std::optional<std::string> model;
  std::optional<int> iterations;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    int number = 0;
    if (arg == "--cpu") {
      o.cpu = true;
      continue;
    }
    if (arg == "--ranks-alone") {
      o.ranks_alone = true;
      continue;
    }
    if (value == nullptr) return usage(absl::StrCat(arg, ": expected a value after it"));
    ++i;
    if (arg == "--model") {
      model = value;
    } else if (arg == "--flush") {
      std::optional<monotile::kernels::k3::L2Flush> flush =
          monotile::kernels::k3::parse_flush_option("layer_tp_bench", value);
      if (!flush) return 2;
      o.flush = *flush;
    } else if (arg == "--seed" && absl::SimpleAtoi(value, &o.seed)) {
    } else if (!absl::SimpleAtoi(value, &number) ||
               number < (arg == "--kda-layer" || arg == "--ffn-layer" ? 0 : 1)) {
      return usage(absl::StrCat(arg, " ", value, ": expected ",
                                arg == "--kda-layer" || arg == "--ffn-layer"
                                    ? "a layer, 0 or more"
                                    : "a count, 1 or more"));
    } else if (arg == "--kda-layer") {
      o.kda_layer = number;
    } else if (arg == "--ffn-layer") {
      o.ffn_layer = number;
    } else if (arg == "--requests") {
      o.requests = number;
    } else if (arg == "--q") {
      o.q = number;
    } else if (arg == "--iterations") {
      iterations = number;
    } else if (arg == "--experts") {
      o.experts = number;
    } else {
      return usage(absl::StrCat("unexpected \"", arg, "\""));
    }
  }
  o.model = model.value_or(o.cpu ? "k3-tiny" : "k3");
  o.iterations = iterations.value_or(o.cpu ? 2 : 20);
  // The layers' kinds before the fork (a misuse exits 2 at once); their cases are made by each
  // rank once it has a device, so that a machine without one says so without making them.
  for (auto [layer, kda] : {std::pair{o.kda_layer, true}, std::pair{o.ffn_layer, false}}) {
    absl::StatusOr<LayerModel> made =
        open_layer_model(o.model, o.seed, 1, 0, layer, LayerStage::kLayer, o.experts);
    if (!made.ok()) return usage(std::string(made.status().message()));
    if (made->kda() != kda) {
      return usage(absl::StrCat(kda ? "--kda-layer " : "--ffn-layer ", layer, ": layer ", layer,
                                " of ", o.model, " is ", kda ? "an MLA" : "a KDA",
                                " layer; expected ", kda ? "a KDA" : "an MLA", " layer"));
    }
  }
  std::fflush(stdout);  // nothing buffered is printed twice by the forked rank
  const monotile::runtime::decode::ForkedRanks ranks = monotile::runtime::decode::run_forked_ranks(
      [&](monotile::runtime::decode::Group& group) { return run_rank(group, o); });
  if (ranks.rank0.rfind("skip: ", 0) == 0) {
    std::printf("layer_tp_bench: no GPU, nothing timed (%s)\n", ranks.rank0.substr(6).c_str());
    return 0;
  }
  if (!ranks.rank0.empty() || !ranks.rank1.empty() || !ranks.rank1_exited) {
    std::fflush(stdout);
    std::fprintf(stderr, "layer_tp_bench: FAILED, no times reported: rank 0: %s; rank 1: %s%s\n",
                 ranks.rank0.empty() ? "ok" : ranks.rank0.c_str(),
                 ranks.rank1.empty() ? "ok" : ranks.rank1.c_str(),
                 ranks.rank1_exited ? "" : " (did not exit normally)");
    return 1;
  }
  return 0;
}
