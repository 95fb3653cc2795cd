// The MPI group, run as two processes (mpi_group_test.sh: `mpirun -np 2`): every rank's bytes come
// back in rank order on every rank, whatever their lengths and values, and agree's verdict holds on
// every rank. One group lives for the whole run (MPI starts once and finalizes once a process).
#include "runtime/decode/mpi_group.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/decode/agree.h"

namespace monotile::runtime::decode {
namespace {

Group* world = nullptr;

// Makes the group before the first test and destroys it (finalizing MPI) after the last.
class MpiEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Group>> made = make_mpi_group();
    ASSERT_TRUE(made.ok()) << made.status();
    group_ = std::move(*made);
    world = group_.get();
  }
  void TearDown() override {
    world = nullptr;
    group_.reset();
  }

 private:
  std::unique_ptr<Group> group_;
};

const auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new MpiEnvironment);

TEST(MpiGroup, IsTheWorldOfTwoProcesses) {
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world->size(), 2);
  EXPECT_GE(world->rank(), 0);
  EXPECT_LT(world->rank(), 2);
}

// mpirun_two.sh starts both processes on this machine: one node, local ranks as world ranks.
TEST(MpiGroup, LocalRankIsTheRankAmongThisMachinesProcesses) {
  ASSERT_NE(world, nullptr);
  EXPECT_EQ(world->local_size(), 2);
  EXPECT_EQ(world->local_rank(), world->rank());
  absl::StatusOr<std::vector<std::string>> gathered =
      world->all_gather(std::to_string(world->local_rank()));
  ASSERT_TRUE(gathered.ok()) << gathered.status();
  EXPECT_THAT(*gathered, ::testing::ElementsAre("0", "1"));
}

// Rank r hands in r + 3 bytes holding zeros and high bytes; each rank gets both, in rank order.
std::string bytes_of(int rank) {
  std::string bytes(static_cast<size_t>(rank + 3), '\0');
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(0xf0 + 7 * rank + static_cast<int>(i));
  bytes[1] = '\0';
  return bytes;
}

TEST(MpiGroup, AllGatherReturnsEveryRanksBytesInRankOrder) {
  ASSERT_NE(world, nullptr);
  absl::StatusOr<std::vector<std::string>> gathered = world->all_gather(bytes_of(world->rank()));
  ASSERT_TRUE(gathered.ok()) << gathered.status();
  EXPECT_THAT(*gathered, ::testing::ElementsAre(bytes_of(0), bytes_of(1)));
}

TEST(MpiGroup, AllGatherTakesNoBytesFromSomeRanks) {
  ASSERT_NE(world, nullptr);
  absl::StatusOr<std::vector<std::string>> none = world->all_gather("");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(*none, ::testing::ElementsAre("", ""));
  absl::StatusOr<std::vector<std::string>> one =
      world->all_gather(world->rank() == 1 ? "handle" : "");
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_THAT(*one, ::testing::ElementsAre("", "handle"));
}

TEST(MpiGroup, ManyCollectivesInARowStayInStep) {
  ASSERT_NE(world, nullptr);
  for (int i = 0; i < 200; ++i) {
    absl::StatusOr<std::vector<std::string>> gathered =
        world->all_gather(std::to_string(i * 10 + world->rank()));
    ASSERT_TRUE(gathered.ok()) << gathered.status();
    ASSERT_THAT(*gathered,
                ::testing::ElementsAre(std::to_string(i * 10), std::to_string(i * 10 + 1)))
        << i;
  }
}

TEST(MpiGroup, AgreeRefusesOnEveryRankWhenOneRefuses) {
  ASSERT_NE(world, nullptr);
  std::vector<std::string> reasons;
  if (world->rank() == 1) reasons.push_back("layer 5 weight \"self_attn.dt_bias\" is missing");
  absl::Status status = agree(reasons, *world, "the weights");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(status.message()),
      ::testing::HasSubstr(world->rank() == 0 ? "another TP rank refused (rank 1)"
                                              : "layer 5 weight \"self_attn.dt_bias\" is missing"));
  EXPECT_TRUE(agree({}, *world, "the weights").ok());
}

TEST(MpiGroup, ASecondGroupWhileTheFirstLivesWorksBesideIt) {
  ASSERT_NE(world, nullptr);
  absl::StatusOr<std::unique_ptr<Group>> second = make_mpi_group();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ((*second)->rank(), world->rank());
  absl::StatusOr<std::vector<std::string>> gathered =
      (*second)->all_gather(world->rank() == 0 ? "a" : "b");
  ASSERT_TRUE(gathered.ok()) << gathered.status();
  EXPECT_THAT(*gathered, ::testing::ElementsAre("a", "b"));
}

}  // namespace
}  // namespace monotile::runtime::decode
