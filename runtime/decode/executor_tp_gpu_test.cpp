// The executor over a group of TP ranks on one GPU: two ranks as two processes of this test (forked
// before either touches the driver) sharing the first GPU, their group a socket pair, each serving
// k3-tiny's KDA layers 1 and 2 (K1, then K2 exchanging over the group's peer buffer mapped through
// IPC handles) with half the GPU's SMs (ExecutorOptions::programs). Two steps eagerly with
// different inputs, then the step captured into a graph (the epoch bump inside) and replayed on
// each one's inputs, both parity halves (run_graph_steps): each replay writes bit for bit what the
// eager step on its inputs wrote, the device's epoch counts every replay, and both ranks hold the
// same bits. Skips without a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "model/config.h"
#include "runtime/decode/executor_tp_test_support.h"
#include "runtime/decode/socket_pair_group.h"
#include "runtime/discovery.h"

namespace monotile::runtime::decode {
namespace {

// One rank's part: "" when it passed, "skip: <why>" without a GPU, else what failed.
std::string run_gpu_rank(Group& group, const model::ModelConfig& config) {
  Discovery found = discover_devices();
  std::unique_ptr<Device> gpu = take_first_gpu(found);
  // The other rank decides the same (one GPU for both): neither enters the group's collectives.
  if (!gpu) return absl::StrCat("skip: ", no_gpu_reason(found));
  ExecutorOptions options;
  options.programs = std::max(1, gpu->info().compute_units / 2);
  absl::Status status = [&]() -> absl::Status {
    MT_ASSIGN_OR_RETURN(std::unique_ptr<KdaRank> r,
                        KdaRank::create(group, config, options, std::move(gpu)));
    MT_ASSIGN_OR_RETURN(GraphSteps steps, run_graph_steps(*r, "executor tp gpu step"));
    if (std::string broke = graph_steps_verdict(steps); !broke.empty())
      return absl::InternalError(broke);
    std::string mine;
    for (const std::string& bytes : steps.eager) mine += bytes;
    for (const std::string& bytes : steps.replayed) mine += bytes;
    MT_ASSIGN_OR_RETURN(std::vector<std::string> both, group.all_gather(mine));
    if (both[0] != both[1]) return absl::InternalError("the ranks' outputs differ");
    return group.all_gather("")
        .status();  // no rank frees its peer buffer while the other may use it
  }();
  return status.ok() ? "" : std::string(status.message());
}

TEST(ExecutorTpGpu, TwoProcessesOnOneGpuReplayACapturedStepAsTheEagerOne) {
  const model::ModelConfig config = *model::load_config("k3-tiny");
  const ForkedRanks verdicts =
      run_forked_ranks([&](Group& group) { return run_gpu_rank(group, config); });
  if (verdicts.rank0.rfind("skip: ", 0) == 0) GTEST_SKIP() << verdicts.rank0.substr(6);
  EXPECT_EQ(verdicts.rank0, "") << "rank 0";
  EXPECT_EQ(verdicts.rank1, "") << "rank 1";
  EXPECT_TRUE(verdicts.rank1_exited) << "rank 1's process ended abnormally";
}

}  // namespace
}  // namespace monotile::runtime::decode
