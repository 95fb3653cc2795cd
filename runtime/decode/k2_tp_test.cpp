// K2 across TP ranks on the interpreter: ranks as threads (InProcessGroup), each with its own CPU
// device, its peer buffer (PeerBuffer) and its shards of one TP 1 case's weights, cut as vLLM cuts
// them (k3_checkpoint.md 3: o_proj's input columns, the shared experts' gate and up rows and their
// down columns, each expert's w1 and w3 rows and w2 columns, up_proj's rows). Its three reductions
// go through PeerExchange (peer_exchange.h). At TP 2, 4 and 8 every rank's outputs are the TP 1
// reference's within the partials' roundings, and bit for bit every other rank's; over two steps
// (the second on the other parity half, nothing zeroed) and from near the epoch's wrap. A rank whose
// peer never sends (absent, or stalled by the fault hook) gives up its waits within their bound,
// records the peer and the tags, and ends; a stale flag of an earlier epoch is never taken.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/k2.h"
#include "kernels/k3/k2_test_support.h"
#include "kernels/k3/peer_exchange.h"
#include "model/config.h"
#include "runtime/decode/in_process_group.h"
#include "runtime/decode/peer_buffer.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"
#include "runtime/k2_launch.h"
#include "runtime/launch_state.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {
namespace {

using kernels::k3::K2Inputs;
using kernels::k3::K2Outputs;

// Rows [first, first + count) of each of `blocks` row-major blocks of `rows` rows of `row_bytes`
// bytes: a rank's slice of a tensor of per-expert (or per-half) blocks.
template <typename T>
std::vector<T> slice_rows(const std::vector<T>& whole, int64_t blocks, int64_t rows, int64_t row_elements,
                          int64_t first, int64_t count) {
  std::vector<T> out;
  out.reserve(static_cast<size_t>(blocks * count * row_elements));
  for (int64_t b = 0; b < blocks; ++b) {
    auto from = whole.begin() + (b * rows + first) * row_elements;
    out.insert(out.end(), from, from + count * row_elements);
  }
  return out;
}

// Columns [first, first + count) of a row-major [rows, columns] tensor.
template <typename T>
std::vector<T> slice_columns(const std::vector<T>& whole, int64_t rows, int64_t columns, int64_t first,
                             int64_t count) {
  std::vector<T> out;
  out.reserve(static_cast<size_t>(rows * count));
  for (int64_t r = 0; r < rows; ++r) {
    auto from = whole.begin() + r * columns + first;
    out.insert(out.end(), from, from + count);
  }
  return out;
}

// Rank `rank` of `tp`'s K2 case cut from the TP 1 case `whole` (k3_checkpoint.md 3): o_proj's
// input columns (core and w_o), the shared experts' gate rows and up rows (w_gu) and down columns
// (w_sd), each expert's w1 rows and w3 rows (w13 and its scales) and w2 columns (bytes and scale
// codes), up_proj's rows; the rest replicated. Its build exchanges over `tp` ranks.
K2Inputs rank_inputs(const K2Inputs& whole, int tp, int rank) {
  K2Inputs in = whole;
  const model::RankDims dims = *model::rank_dims(whole.config, tp, rank);
  absl::StatusOr<kernels::k3::K2Build> build =
      kernels::k3::k2_build(whole.config, dims, whole.c.layer, static_cast<int>(dims.kda_projection), whole.c.tokens);
  EXPECT_TRUE(build.ok()) << build.status();
  in.build = *build;
  in.build.wait_ns = whole.build.wait_ns;
  in.build.tp = tp;
  in.build.rank = rank;
  const kernels::k3::K2Build& w = whole.build;
  const int64_t h = w.hidden, t_count = w.tokens, lat = w.latent;
  const int64_t cw = in.build.core_width, si = in.build.shared_rows, ir = in.build.expert_rows;
  const int64_t held = static_cast<int64_t>(whole.w13.size()) / (2 * w.expert_rows * lat / 2);
  in.core = slice_columns(whole.core, t_count, w.core_width, rank * cw, cw);
  in.w_o = slice_columns(whole.w_o, h, w.core_width, rank * cw, cw);
  std::vector<uint16_t> gate = slice_rows(whole.w_gu, 1, 2 * w.shared_rows, h, rank * si, si);
  std::vector<uint16_t> up = slice_rows(whole.w_gu, 1, 2 * w.shared_rows, h, w.shared_rows + rank * si, si);
  in.w_gu = gate;
  in.w_gu.insert(in.w_gu.end(), up.begin(), up.end());
  in.w_sd = slice_columns(whole.w_sd, h, w.shared_rows, rank * si, si);
  auto w13 = [&](const std::vector<uint8_t>& bytes, int64_t row_bytes) {
    std::vector<uint8_t> out;
    for (int64_t e = 0; e < held; ++e) {
      for (int64_t half = 0; half < 2; ++half) {
        auto from = bytes.begin() + ((e * 2 + half) * w.expert_rows + rank * ir) * row_bytes;
        out.insert(out.end(), from, from + ir * row_bytes);
      }
    }
    return out;
  };
  in.w13 = w13(whole.w13, lat / 2);
  in.w13_scale = w13(whole.w13_scale, lat / 32);
  in.w2 = slice_columns(whole.w2, held * lat, w.expert_rows / 2, rank * ir / 2, ir / 2);
  in.w2_scale = slice_columns(whole.w2_scale, held * lat, w.expert_rows / 32, rank * ir / 32, ir / 32);
  in.w_up = slice_rows(whole.w_up, 1, h, lat, in.build.up_first, in.build.up_rows);
  return in;
}

// One rank's tensors on its device, as K2's binding takes them.
class RankTensors {
 public:
  RankTensors(Device& device, const K2Inputs& in) : device_(device), in_(in) {
    t_.core = upload(in.core);
    t_.w_o = upload(in.w_o);
    t_.prefix = upload(in.prefix);
    t_.blocks = upload(in.blocks);
    t_.blocks_token_stride = in.block_count * in.build.hidden;
    t_.blocks_block_stride = in.build.hidden;
    t_.mlp_res_norm = upload(in.mlp_res_norm);
    t_.mlp_res_proj = upload(in.mlp_res_proj);
    t_.post_norm = upload(in.post_norm);
    t_.w_gate = upload(in.w_gate);
    t_.gate_bias = upload(in.gate_bias);
    t_.w_ld = upload(in.w_ld);
    t_.w_gu = upload(in.w_gu);
    t_.w_sd = upload(in.w_sd);
    t_.w13 = upload(in.w13);
    t_.w13_scale = upload(in.w13_scale);
    t_.w2 = upload(in.w2);
    t_.w2_scale = upload(in.w2_scale);
    t_.latent_norm = upload(in.latent_norm);
    t_.w_up = upload(in.w_up);
    t_.out = upload(std::vector<uint16_t>(rows(), 0));
    t_.route_experts = upload(std::vector<int32_t>(routes(), 0));
    t_.route_weights = upload(std::vector<float>(routes(), 0.0f));
  }

  // Restores the prefix (K2 updates it in place) and poisons every output, a and y included: a NaN,
  // expert -7 and a NaN weight. A launch expected to give up a wait (`failing`) runs to its end on
  // what the skipped waits left, so its routes start at expert 0 instead (the interpreter refuses an
  // access out of bounds).
  void reset(const K2Launch& launch, bool failing) {
    copy_in(t_.prefix, in_.prefix);
    copy_in(t_.out, std::vector<uint16_t>(rows(), kPoison));
    copy_in(t_.route_experts, std::vector<int32_t>(routes(), failing ? 0 : -7));
    copy_in(t_.route_weights, std::vector<float>(routes(), failing ? 0.0f : std::nanf("")));
    copy_in(launch.a_rows(), std::vector<uint16_t>(rows(), kPoison));
    copy_in(launch.y_rows(), std::vector<uint16_t>(rows(), kPoison));
  }

  K2Outputs outputs(const K2Launch& launch) {
    K2Outputs got;
    got.a = copy_out<uint16_t>(launch.a_rows(), rows());
    got.y = copy_out<uint16_t>(launch.y_rows(), rows());
    got.prefix = copy_out<uint16_t>(t_.prefix, rows());
    got.out = copy_out<uint16_t>(t_.out, rows());
    got.route_experts = copy_out<int32_t>(t_.route_experts, routes());
    got.route_weights = copy_out<float>(t_.route_weights, routes());
    return got;
  }

  const K2Tensors& tensors() const { return t_; }

 private:
  static constexpr uint16_t kPoison = 0x7fc1;
  size_t rows() const { return static_cast<size_t>(in_.build.tokens) * in_.build.hidden; }
  size_t routes() const { return static_cast<size_t>(in_.build.tokens) * in_.build.top_k; }

  template <typename T>
  DevicePtr upload(const std::vector<T>& values) {
    absl::StatusOr<DeviceBuffer> buffer = device_.allocate(std::max<size_t>(values.size() * sizeof(T), 16));
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    copy_in(buffer->address(), values);
    buffers_.push_back(std::move(*buffer));
    return buffers_.back().address();
  }
  template <typename T>
  void copy_in(DevicePtr at, const std::vector<T>& values) {
    EXPECT_TRUE(device_.copy_to_device(at, values.data(), values.size() * sizeof(T)).ok());
  }
  template <typename T>
  std::vector<T> copy_out(DevicePtr at, size_t count) {
    std::vector<T> values(count);
    EXPECT_TRUE(device_.copy_to_host(values.data(), at, count * sizeof(T)).ok());
    return values;
  }

  Device& device_;
  const K2Inputs& in_;
  K2Tensors t_;
  std::vector<DeviceBuffer> buffers_;
};

// What one rank did over its steps.
struct RankSteps {
  absl::Status status;             // the first error making, launching or reading back
  std::vector<K2Outputs> steps;    // each launched step's outputs
  std::vector<absl::Status> health;  // each launched step's check_health
  std::vector<double> seconds;     // each launched step's launch to synchronize
};

// Runs K2 on every rank of `ranks` (rank r's case at r) as threads of an InProcessGroup, each over
// `programs` programs, for each epoch of `epochs` in turn on one scratch and one peer buffer (nothing
// zeroed between steps). `skip(rank, step)` true: that rank does not launch that step (a rank that
// died or stalled before it); `failing(rank, step)` true: that launch is expected to give up a wait
// (RankTensors::reset), and the rank's scratch starts zeroed.
std::vector<RankSteps> run_k2_ranks(const std::vector<K2Inputs>& ranks, int programs,
                                    const std::vector<int32_t>& epochs,
                                    const std::function<bool(int, size_t)>& skip = nullptr,
                                    const std::function<bool(int, size_t)>& failing = nullptr) {
  const int tp = static_cast<int>(ranks.size());
  std::vector<RankSteps> runs(ranks.size());
  std::vector<absl::Status> statuses = InProcessGroup::run(tp, [&](Group& group) -> absl::Status {
    const int rank = group.rank();
    const K2Inputs& in = ranks[static_cast<size_t>(rank)];
    RankSteps& run = runs[static_cast<size_t>(rank)];
    std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(ProgramCatalog::process()));
    const kernels::k3::PeerExchangeLayout layout =
        kernels::k3::peer_exchange_layout(tp, in.build.hidden, in.build.latent);
    MT_ASSIGN_OR_RETURN(std::unique_ptr<PeerBuffer> peer,
                        PeerBuffer::create(*device, group, static_cast<size_t>(layout.bytes())));
    absl::Status ran = [&]() -> absl::Status {
      MT_ASSIGN_OR_RETURN(Kernel kernel, load_k2(*device, in.build, jit::Jit::process_default()));
      MT_ASSIGN_OR_RETURN(LaunchState made, LaunchState::create(*device, programs, "K2"));
      auto state = std::make_shared<LaunchState>(std::move(made));
      std::vector<DevicePtr> peers;
      for (int r = 0; r < tp; ++r) peers.push_back(peer->address(r));
      state->set_peers(peers);
      MT_ASSIGN_OR_RETURN(K2Launch launch, K2Launch::create(*device, in.build, state, &kernel));
      MT_ASSIGN_OR_RETURN(Stream stream, device->create_stream());
      RankTensors tensors(*device, in);
      if (failing) {
        // The data a failed launch reads where it skipped a wait: zero, never out of bounds.
        MT_RETURN_IF_ERROR(device->fill_bytes(launch.scratch(), 0, static_cast<size_t>(launch.layout().bytes)));
      }
      for (size_t s = 0; s < epochs.size(); ++s) {
        if (skip && skip(rank, s)) continue;
        tensors.reset(launch, failing && failing(rank, s));
        MT_RETURN_IF_ERROR(launch.set_epoch(epochs[s]));
        const auto start = std::chrono::steady_clock::now();
        MT_RETURN_IF_ERROR(launch.launch(kernel, tensors.tensors(), in.c.layer, stream));
        MT_RETURN_IF_ERROR(device->synchronize(stream));
        run.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        run.health.push_back(launch.check_health());
        run.steps.push_back(tensors.outputs(launch));
      }
      return absl::OkStatus();
    }();
    // Nobody frees its buffer while another rank may still write into it.
    absl::Status barrier = group.all_gather("").status();
    return ran.ok() ? barrier : ran;
  });
  for (size_t r = 0; r < runs.size(); ++r) {
    if (runs[r].status.ok()) runs[r].status = statuses[r];
  }
  return runs;
}

struct TpCase {
  int tp = 2;
  int layer = 1;
  int tokens = 4;
  int programs = 3;
  std::vector<int32_t> epochs = {1, 2};
};

std::string name_of(const TpCase& c) {
  return absl::StrCat("tp", c.tp, "_L", c.layer, "_t", c.tokens, "_p", c.programs, "_e", c.epochs.front());
}

class K2Tp : public ::testing::TestWithParam<TpCase> {};

TEST_P(K2Tp, EveryRankHoldsTheTp1ResultBitForBit) {
  const TpCase& c = GetParam();
  const K2Inputs whole = kernels::k3::make_k2_inputs({.layer = c.layer, .tokens = c.tokens}, /*interpreter=*/true);
  ASSERT_FALSE(whole.core.empty());
  std::vector<K2Inputs> ranks;
  for (int r = 0; r < c.tp; ++r) ranks.push_back(rank_inputs(whole, c.tp, r));
  const std::vector<RankSteps> runs = run_k2_ranks(ranks, c.programs, c.epochs);
  for (int r = 0; r < c.tp; ++r) {
    const RankSteps& run = runs[static_cast<size_t>(r)];
    ASSERT_TRUE(run.status.ok()) << "rank " << r << ": " << run.status;
    ASSERT_EQ(run.steps.size(), c.epochs.size());
    for (size_t s = 0; s < c.epochs.size(); ++s) {
      SCOPED_TRACE(absl::StrCat("rank ", r, ", epoch ", c.epochs[s]));
      const K2Outputs& got = run.steps[s];
      if (r == 0) kernels::k3::check_k2_outputs(whole, got, c.tp);
      const K2Outputs& first = runs[0].steps[s];
      EXPECT_EQ(got.a, first.a) << "o_proj's reduced a differs from rank 0's";
      EXPECT_EQ(got.prefix, first.prefix);
      EXPECT_EQ(got.y, first.y);
      EXPECT_EQ(got.route_experts, first.route_experts) << "the ranks chose different experts";
      EXPECT_EQ(0, std::memcmp(got.route_weights.data(), first.route_weights.data(), got.route_weights.size() * 4));
      EXPECT_EQ(got.out, first.out) << "the MoE output differs from rank 0's";
      // The second step (the other parity half) writes what the first wrote.
      if (s > 0) {
        EXPECT_EQ(got.out, run.steps[0].out);
      }
    }
  }
}

std::vector<TpCase> cases() {
  return {
      {.tp = 2, .layer = 12, .tokens = 6, .programs = 3},  // a block-write layer: the prefix restarts at a
      {.tp = 4, .layer = 1, .tokens = 4, .programs = 2},
      {.tp = 8, .layer = 5, .tokens = 3, .programs = 2},
      // From the last epoch below the tag's 22-bit wrap, then to 0 in the tag (the i32 epoch goes
      // on), and from the i32's last value to its first.
      {.tp = 2, .layer = 1, .tokens = 2, .programs = 2, .epochs = {(1 << 22) - 1, 1 << 22}},
      {.tp = 2, .layer = 1, .tokens = 1, .programs = 2, .epochs = {INT32_MAX, INT32_MIN}},
  };
}

INSTANTIATE_TEST_SUITE_P(Ranks, K2Tp, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<TpCase>& info) {
                           std::string name = name_of(info.param);
                           std::replace(name.begin(), name.end(), '-', 'm');
                           return name;
                         });

// The waits of a rank whose peer is gone: ranks of TP 2 with waits bounded by `wait_ns` (2
// programs a rank, each with o_proj shares, so that the first wait to give up is a peer's).
std::vector<K2Inputs> fault_ranks(int64_t wait_ns, int32_t fault_epoch = 0, int64_t fault_ns = 0) {
  const K2Inputs whole = kernels::k3::make_k2_inputs({.layer = 1, .tokens = 2}, /*interpreter=*/true);
  EXPECT_FALSE(whole.core.empty());
  std::vector<K2Inputs> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(rank_inputs(whole, 2, r));
    ranks.back().build.wait_ns = wait_ns;
  }
  if (fault_ns != 0) {
    ranks[1].build.fault_epoch = fault_epoch;
    ranks[1].build.fault_layer = 128 + whole.c.layer;
    ranks[1].build.fault_ns = fault_ns;
  }
  return ranks;
}

// Epochs 1 and 2 on both ranks, then epoch 3 on rank 0 alone: its half of the peer buffer holds rank
// 1's flags of epoch 1 (same parity, same layer), with that step's data beside them. Rank 0 must
// not take them for epoch 3's: its waits give up, recording the stale tag they saw, and the launch
// ends within the bound (plus the interpreter's time for the rest of the launch).
TEST(K2TpFault, AStaleTagOfAnEarlierEpochIsNeverTakenForThisStepsData) {
  constexpr int64_t kWaitNs = 3'000'000'000;  // healthy steps' waits cover the interpreter's pace
  const std::vector<K2Inputs> ranks = fault_ranks(kWaitNs);
  if (HasFailure()) return;
  const std::vector<RankSteps> runs = run_k2_ranks(
      ranks, 2, {1, 2, 3}, [](int rank, size_t step) { return rank == 1 && step == 2; },
      [](int rank, size_t step) { return rank == 0 && step == 2; });
  for (const RankSteps& run : runs) ASSERT_TRUE(run.status.ok()) << run.status;
  ASSERT_EQ(runs[0].health.size(), 3u);
  for (size_t s = 0; s < 2; ++s) {
    for (const RankSteps& run : runs) EXPECT_TRUE(run.health[s].ok()) << run.health[s];
  }
  const int slot = 128 + ranks[0].c.layer;
  EXPECT_THAT(std::string(runs[0].health[2].message()),
              ::testing::AllOf(::testing::HasSubstr(absl::StrCat(
                                   "waited on o_proj's partial sums (region 9) from TP rank 1: expected tag ",
                                   kernels::k3::step_tag(3, slot), ", saw ", kernels::k3::step_tag(1, slot))),
                               ::testing::HasSubstr("hint: that TP rank stalled, died or runs other steps")));
  EXPECT_LT(runs[0].seconds[2], kWaitNs * 1e-9 + 10) << "the give-up ends the launch";
}

// Rank 1's K2 stalls its program 0 (the fault hook) for far longer than the waits' bound: rank 0's
// waits for rank 1's shares give up, recorded, and its launch ends long before rank 1's stall does;
// rank 1's own waits on its stalled program give up too. Neither hangs.
TEST(K2TpFault, AStallAtOneRankMakesTheOtherGiveUpWithinTheBound) {
  constexpr int64_t kWaitNs = 500'000'000, kFaultNs = 6'000'000'000;
  const std::vector<K2Inputs> ranks = fault_ranks(kWaitNs, 1, kFaultNs);
  if (HasFailure()) return;
  const auto start = std::chrono::steady_clock::now();
  const std::vector<RankSteps> runs =
      run_k2_ranks(ranks, 2, {1}, nullptr, [](int, size_t) { return true; });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const RankSteps& run : runs) ASSERT_TRUE(run.status.ok()) << run.status;
  ASSERT_EQ(runs[0].health.size(), 1u);
  ASSERT_EQ(runs[1].health.size(), 1u);
  EXPECT_THAT(std::string(runs[0].health[0].message()),
              ::testing::HasSubstr(absl::StrCat("from TP rank 1: expected tag ", kernels::k3::step_tag(1, 129))));
  EXPECT_THAT(std::string(runs[1].health[0].message()), ::testing::HasSubstr("a hand-off wait gave up after 500 ms"));
  EXPECT_LT(runs[0].seconds[0], kFaultNs * 1e-9 - 2) << "rank 0 waited for the stalled rank";
  EXPECT_GE(runs[1].seconds[0], kFaultNs * 1e-9) << "the stall ran";
  EXPECT_LT(seconds, kFaultNs * 1e-9 + 20) << "the stalled rank's launch ends once its stall does";
}

}  // namespace
}  // namespace monotile::runtime::decode
