// K2 at TP 2 on one GPU: its two ranks are two processes of this test (forked before either touches
// the driver) sharing the first GPU, their group a socket pair, each with its shards of one k3-tiny
// TP 1 case (k2_tp_test_support.h), its peer buffer over the driver's IPC handles and a grid of
// half the GPU's SMs (the ranks' grids then fit the GPU at once where both run together; otherwise
// the driver time-slices the processes and the exchanges progress slice by slice, within the waits'
// 10 s). Over two steps (both parity halves): rank 0's outputs against the TP 1 float64 reference,
// and both ranks' outputs bit for bit the same. Skips without a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "dsl/target.h"
#include "kernels/k3/k2.h"
#include "kernels/k3/k2_test_support.h"
#include "runtime/decode/k2_tp_test_support.h"
#include "runtime/decode/socket_pair_group.h"
#include "runtime/discovery.h"

namespace monotile::runtime::decode {
namespace {

template <typename T>
void append_bytes(std::string& out, const std::vector<T>& v) {
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// A step's outputs as bytes, to compare the ranks' bit for bit.
std::string bytes_of(const K2Outputs& got) {
  std::string out;
  for (const std::vector<uint16_t>* v : {&got.a, &got.prefix, &got.y, &got.out})
    append_bytes(out, *v);
  append_bytes(out, got.route_experts);
  append_bytes(out, got.route_weights);
  return out;
}

// One rank's part: "" when it passed, "skip: <why>" without a GPU, else what failed. Rank 0's
// outputs come back in `steps` for the reference check.
std::string run_gpu_rank(Group& group, const std::vector<K2Inputs>& ranks,
                         std::vector<K2Outputs>* steps) {
  Discovery found = discover_devices();
  std::unique_ptr<Device> gpu = take_first_gpu(found);
  // The other rank decides the same (one GPU for both): neither enters the group's collectives.
  if (!gpu) return absl::StrCat("skip: ", no_gpu_reason(found));
  K2Inputs in = ranks[static_cast<size_t>(group.rank())];
  in.build = kernels::k3::k2_for_target(in.build, gpu->info().target);
  const int programs = std::max(1, gpu->info().compute_units / 2);
  RankSteps run = run_k2_rank(group, *gpu, in, programs, {1, 2});
  if (!run.status.ok()) return std::string(run.status.message());
  for (const absl::Status& health : run.health) {
    if (!health.ok()) return std::string(health.message());
  }
  for (size_t s = 0; s < run.steps.size(); ++s) {
    absl::StatusOr<std::vector<std::string>> both = group.all_gather(bytes_of(run.steps[s]));
    if (!both.ok()) return std::string(both.status().message());
    if ((*both)[0] != (*both)[1])
      return absl::StrCat("step ", s + 1, ": the ranks' outputs differ");
  }
  if (steps != nullptr) *steps = std::move(run.steps);
  return "";
}

TEST(K2TpGpu, TwoProcessesOnOneGpuHoldTheTp1ResultBitForBit) {
  // The case and its shards on the host, before the fork: both processes hold the same.
  const K2Inputs whole =
      kernels::k3::make_k2_inputs({.layer = 1, .tokens = 4}, /*interpreter=*/false);
  ASSERT_FALSE(whole.core.empty());
  const std::vector<K2Inputs> ranks = {rank_inputs(whole, 2, 0), rank_inputs(whole, 2, 1)};
  std::vector<K2Outputs> steps;  // rank 0's, for the reference check
  const ForkedRanks verdicts = run_forked_ranks([&](Group& group) {
    return run_gpu_rank(group, ranks, group.rank() == 0 ? &steps : nullptr);
  });
  if (verdicts.rank0.rfind("skip: ", 0) == 0) GTEST_SKIP() << verdicts.rank0.substr(6);
  EXPECT_EQ(verdicts.rank0, "") << "rank 0";
  EXPECT_EQ(verdicts.rank1, "") << "rank 1";
  EXPECT_TRUE(verdicts.rank1_exited) << "rank 1's process ended abnormally";
  ASSERT_EQ(steps.size(), 2u);
  for (const K2Outputs& got : steps) kernels::k3::check_k2_outputs(whole, got, 2);
}

}  // namespace
}  // namespace monotile::runtime::decode
