// N ranks as threads of one process; see in_process_group.h.
#include "runtime/decode/in_process_group.h"

#include <thread>

namespace monotile::runtime::decode {

InProcessGroup::InProcessGroup(int size) : slots_(static_cast<size_t>(size)) {
  ranks_.reserve(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) ranks_.emplace_back(*this, r);
}

absl::StatusOr<std::vector<std::string>> InProcessGroup::Rank::all_gather(std::string_view bytes) {
  InProcessGroup& g = *group_;
  std::unique_lock lock(g.mutex_);
  g.slots_[static_cast<size_t>(rank_)] = std::string(bytes);
  // A generation counter, so that a rank entering the next collective early cannot be mistaken
  // for one still in this one.
  const int generation = g.generation_;
  if (++g.arrived_ == g.size()) {
    g.result_ = g.slots_;
    g.arrived_ = 0;
    ++g.generation_;
    g.done_.notify_all();
  } else {
    g.done_.wait(lock, [&] { return g.generation_ != generation; });
  }
  return g.result_;
}

std::vector<absl::Status> InProcessGroup::run(int size,
                                              const std::function<absl::Status(Group&)>& body) {
  InProcessGroup group(size);
  std::vector<absl::Status> statuses(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] { statuses[static_cast<size_t>(r)] = body(group.rank(r)); });
  }
  for (std::thread& thread : threads) thread.join();
  return statuses;
}

}  // namespace monotile::runtime::decode
