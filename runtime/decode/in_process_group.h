// InProcessGroup: N TP ranks in one process, one thread each, behind Group. Every all_gather waits
// until every rank has called it, as a collective over a real group does; the executor's tests and
// `monotile decode` run N ranks this way on one machine.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/decode/group.h"

namespace monotile::runtime::decode {

class InProcessGroup {
 public:
  explicit InProcessGroup(int size);

  // Runs `body` on `size` ranks, one thread each; returns each rank's status, in rank order.
  static std::vector<absl::Status> run(int size, const std::function<absl::Status(Group&)>& body);

  // The Group of rank `rank` (0..size-1); valid while this object lives.
  Group& rank(int rank) { return ranks_[static_cast<size_t>(rank)]; }
  int size() const { return static_cast<int>(slots_.size()); }

 private:
  class Rank final : public Group {
   public:
    Rank(InProcessGroup& group, int rank) : group_(&group), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return group_->size(); }
    absl::StatusOr<std::vector<std::string>> all_gather(std::string_view bytes) override;

   private:
    InProcessGroup* group_;
    int rank_;
  };

  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<std::string> slots_, result_;
  std::vector<Rank> ranks_;
  int arrived_ = 0;
  int generation_ = 0;
};

}  // namespace monotile::runtime::decode
