#include "runtime/decode/agree.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

namespace monotile::runtime::decode {
namespace {

// N simulated ranks in one process, one thread each: all_gather waits for every rank.
class SimulatedRanks {
 public:
  explicit SimulatedRanks(int size) : slots_(size) {}

  class Rank final : public Group {
   public:
    Rank(SimulatedRanks& ranks, int rank) : ranks_(ranks), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return static_cast<int>(ranks_.slots_.size()); }
    absl::StatusOr<std::vector<std::string>> all_gather(std::string_view bytes) override {
      std::unique_lock lock(ranks_.mutex_);
      ranks_.slots_[rank_] = std::string(bytes);
      int generation = ranks_.generation_;
      if (++ranks_.arrived_ == size()) {
        ranks_.result_ = ranks_.slots_;
        ranks_.arrived_ = 0;
        ++ranks_.generation_;
        ranks_.done_.notify_all();
      } else {
        ranks_.done_.wait(lock, [&] { return ranks_.generation_ != generation; });
      }
      return ranks_.result_;
    }

   private:
    SimulatedRanks& ranks_;
    int rank_;
  };

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<std::string> slots_, result_;
  int arrived_ = 0;
  int generation_ = 0;
};

// Runs agree on every rank, rank r with reasons[r]; returns each rank's status.
std::vector<absl::Status> agree_on_ranks(const std::vector<std::vector<std::string>>& reasons) {
  SimulatedRanks ranks(static_cast<int>(reasons.size()));
  std::vector<absl::Status> statuses(reasons.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < reasons.size(); ++r) {
    threads.emplace_back([&, r] {
      SimulatedRanks::Rank group(ranks, static_cast<int>(r));
      statuses[r] = agree(reasons[r], group, "the loaded weights");
    });
  }
  for (std::thread& thread : threads) thread.join();
  return statuses;
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

}  // namespace
}  // namespace monotile::runtime::decode
