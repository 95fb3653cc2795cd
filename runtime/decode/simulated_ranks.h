// SimulatedRanks (tests only): N TP ranks in one process, one thread each, behind Group; every
// all_gather waits until every rank has called it.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "runtime/decode/group.h"

namespace monotile::runtime::decode {

class SimulatedRanks {
 public:
  explicit SimulatedRanks(int size) : slots_(size) {}

  // Runs `body` on `size` ranks, one thread each; returns each rank's status, in rank order.
  static std::vector<absl::Status> run(int size, const std::function<absl::Status(Group&)>& body);

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

inline std::vector<absl::Status> SimulatedRanks::run(
    int size, const std::function<absl::Status(Group&)>& body) {
  SimulatedRanks ranks(size);
  std::vector<absl::Status> statuses(size);
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      Rank group(ranks, r);
      statuses[r] = body(group);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return statuses;
}

}  // namespace monotile::runtime::decode
