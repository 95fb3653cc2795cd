// rank_gpu: a node's local ranks over its GPUs, each rank's GPU and how many share it, and the
// executor's programs that follow (their share of the compute units, or all of them alone).
#include "tools/device_choice.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace monotile::tools {
namespace {

TEST(RankGpu, OneProcessTakesTheFirstGpuAlone) {
  const RankGpu gpu = rank_gpu(0, 1, 4);
  EXPECT_EQ(gpu.index, 0);
  EXPECT_EQ(gpu.sharers, 1);
  EXPECT_EQ(gpu.programs(132), 0);
}

TEST(RankGpu, EightRanksOnEightGpusTakeOneEach) {
  for (int r = 0; r < 8; ++r) {
    const RankGpu gpu = rank_gpu(r, 8, 8);
    EXPECT_EQ(gpu.index, r);
    EXPECT_EQ(gpu.sharers, 1) << r;
    EXPECT_EQ(gpu.programs(132), 0) << r;
  }
}

TEST(RankGpu, RanksOnOneGpuSplitItsComputeUnits) {
  for (int r = 0; r < 2; ++r) {
    const RankGpu gpu = rank_gpu(r, 2, 1);
    EXPECT_EQ(gpu.index, 0);
    EXPECT_EQ(gpu.sharers, 2);
    EXPECT_EQ(gpu.programs(132), 66);
  }
  EXPECT_EQ(rank_gpu(3, 8, 1).programs(132), 16);
}

TEST(RankGpu, MoreRanksThanGpusShareThemRoundRobin) {
  // 8 ranks on 2 GPUs: even ranks on GPU 0, odd on GPU 1, four on each.
  for (int r = 0; r < 8; ++r) {
    const RankGpu gpu = rank_gpu(r, 8, 2);
    EXPECT_EQ(gpu.index, r % 2);
    EXPECT_EQ(gpu.sharers, 4) << r;
    EXPECT_EQ(gpu.programs(132), 33) << r;
  }
}

TEST(RankGpu, AnUnevenSplitCountsEachGpusOwnRanks) {
  // 5 ranks on 3 GPUs: GPU 0 holds ranks 0 and 3, GPU 1 ranks 1 and 4, GPU 2 rank 2 alone.
  std::map<int, int> ranks_on;
  for (int r = 0; r < 5; ++r) {
    const RankGpu gpu = rank_gpu(r, 5, 3);
    ++ranks_on[gpu.index];
    EXPECT_EQ(gpu.sharers, gpu.index == 2 ? 1 : 2) << r;
  }
  EXPECT_EQ(ranks_on, (std::map<int, int>{{0, 2}, {1, 2}, {2, 1}}));
  EXPECT_EQ(rank_gpu(2, 5, 3).programs(132), 0);
  EXPECT_EQ(rank_gpu(4, 5, 3).programs(132), 66);
}

TEST(RankGpu, FewerRanksThanGpusLeaveTheRestIdle) {
  EXPECT_EQ(rank_gpu(1, 2, 8).index, 1);
  EXPECT_EQ(rank_gpu(1, 2, 8).sharers, 1);
}

TEST(RankGpu, AShareIsNeverBelowOneProgram) {
  EXPECT_EQ(rank_gpu(0, 4, 1).programs(3), 1);
}

TEST(RankGpuAt, EveryRankOfTheNodeSharesTheGpuNamed) {
  absl::StatusOr<RankGpu> gpu = rank_gpu_at(1, 4, 2);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ(gpu->index, 1);
  EXPECT_EQ(gpu->sharers, 4);
  EXPECT_EQ(gpu->programs(132), 33);
  gpu = rank_gpu_at(0, 1, 1);
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_EQ(gpu->programs(132), 0);
}

TEST(RankGpuAt, RefusesAGpuTheMachineDoesNotHave) {
  absl::StatusOr<RankGpu> gpu = rank_gpu_at(2, 2, 2);
  EXPECT_EQ(gpu.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu.status().message(),
            "--gpu-index 2: expected 0 to 1, an index among this machine's 2 GPUs; hint: "
            "`monotile devices` lists them, and without --gpu-index each rank takes GPU (local "
            "rank % GPUs)");
  EXPECT_THAT(std::string(rank_gpu_at(1, 1, 1).status().message()),
              ::testing::HasSubstr("--gpu-index 1: expected 0 to 0, an index among this "
                                   "machine's 1 GPU;"));
  EXPECT_FALSE(rank_gpu_at(-1, 1, 1).ok());
}

TEST(RankGpuDeathTest, ALocalRankOutsideItsNodeIsOurBug) {
  EXPECT_DEATH(rank_gpu(2, 2, 1), "local_rank < local_size");
  EXPECT_DEATH(rank_gpu(0, 1, 0), "gpus >= 1");
}

}  // namespace
}  // namespace monotile::tools
