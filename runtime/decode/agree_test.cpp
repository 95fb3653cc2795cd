#include "runtime/decode/agree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "runtime/decode/in_process_group.h"

namespace monotile::runtime::decode {
namespace {

// Runs agree on every rank, rank r with reasons[r]; returns each rank's status.
std::vector<absl::Status> agree_on_ranks(const std::vector<std::vector<std::string>>& reasons) {
  return InProcessGroup::run(static_cast<int>(reasons.size()), [&](Group& group) {
    return agree(reasons[group.rank()], group, "the loaded weights");
  });
}

class FailingGroup final : public Group {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  absl::StatusOr<std::vector<std::string>> all_gather(std::string_view) override {
    return absl::UnavailableError("peer 1 closed the connection");
  }
};

TEST(Agree, NoReasonsOnOneRankIsOk) {
  auto group = make_single_process_group();
  EXPECT_TRUE(agree({}, *group, "the loaded weights").ok());
}

TEST(Agree, SingleProcessListsEveryReason) {
  auto group = make_single_process_group();
  absl::Status status = agree({"reason a", "reason b"}, *group, "the KV caches");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "the specialized decode does not support the KV caches: reason a; reason b "
            "(decode_backend \"auto\" runs the stock decode)");
}

TEST(Agree, EveryRankAgreesWhenNoneRefuses) {
  for (const absl::Status& status : agree_on_ranks({{}, {}, {}, {}}))
    EXPECT_TRUE(status.ok()) << status;
}

TEST(Agree, OneRankRefusingAloneMakesEveryRankRefuse) {
  std::vector<absl::Status> statuses =
      agree_on_ranks({{}, {}, {"layer 3 weight \"mlp.gate.weight\" is missing"}, {}});
  for (int rank : {0, 1, 3}) {
    EXPECT_EQ(statuses[rank].message(),
              "the specialized decode does not support the loaded weights: another TP rank "
              "refused (rank 2) (decode_backend \"auto\" runs the stock decode)");
  }
  EXPECT_THAT(std::string(statuses[2].message()),
              ::testing::HasSubstr("layer 3 weight \"mlp.gate.weight\" is missing"));
}

TEST(Agree, NamesEveryRankThatRefused) {
  std::vector<absl::Status> statuses = agree_on_ranks({{}, {"x"}, {}, {"y"}});
  EXPECT_THAT(std::string(statuses[0].message()),
              ::testing::HasSubstr("another TP rank refused (ranks 1, 3)"));
  EXPECT_THAT(std::string(statuses[1].message()),
              ::testing::HasSubstr("does not support the loaded weights: x ("));
  EXPECT_THAT(std::string(statuses[3].message()),
              ::testing::HasSubstr("does not support the loaded weights: y ("));
}

TEST(Agree, AGroupThatFailsIsNamed) {
  FailingGroup group;
  absl::Status status = agree({}, group, "the KV caches");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(),
            "TP ranks could not agree on the KV caches: peer 1 closed the connection");
}

TEST(AgreeOutcome, EveryRankOkWhenEveryRankIsOk) {
  for (const absl::Status& status : InProcessGroup::run(
           3, [](Group& group) { return agree_outcome(absl::OkStatus(), group, "prepare_kv"); })) {
    EXPECT_TRUE(status.ok()) << status;
  }
}

TEST(AgreeOutcome, OneRankFailingAloneFailsEveryRankAndKeepsItsOwnCode) {
  std::vector<absl::Status> statuses = InProcessGroup::run(3, [](Group& group) {
    absl::Status local = group.rank() == 1
                             ? absl::InternalError("nvrtc could not compile build 3fa2")
                             : absl::OkStatus();
    return agree_outcome(local, group, "prepare_kv");
  });
  EXPECT_EQ(statuses[1], absl::InternalError("prepare_kv: nvrtc could not compile build 3fa2"));
  for (int rank : {0, 2}) {
    EXPECT_EQ(statuses[rank], absl::AbortedError("prepare_kv failed on another TP rank (rank 1)"));
  }
}

TEST(AgreeOutcome, AFailingGroupIsReturned) {
  FailingGroup group;
  absl::Status status = agree_outcome(absl::OkStatus(), group, "prepare_kv");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()),
              ::testing::HasSubstr("TP ranks could not agree on prepare_kv: peer 1 closed"));
}

}  // namespace
}  // namespace monotile::runtime::decode
