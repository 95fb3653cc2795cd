// The fail-stop vote; see fail_stop.h.
#include "runtime/decode/fail_stop.h"

#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {

absl::StatusOr<FailStop> FailStop::create(Device& device, DevicePtr failed_word, Group& group,
                                          int check_every) {
  if (check_every < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("FailStop: check_every must be at least 1, got ", check_every));
  }
  FailStop stop;
  stop.device_ = &device;
  stop.group_ = &group;
  stop.failed_word_ = failed_word;
  stop.check_every_ = check_every;
  MT_ASSIGN_OR_RETURN(stop.landing_, device.allocate_host_mapped(4));
  return stop;
}

absl::Status FailStop::after_step(Stream& stream, bool capturing) {
  if (capturing) return absl::OkStatus();
  // The device writes the word while the host may read it: one aligned 4-byte word, read
  // atomically, holds either the old copy or the new one.
  std::atomic_ref<int32_t> landed(*landing_.host_as<int32_t>());
  if (landed.load(std::memory_order_acquire) != 0) seen_ = true;
  MT_RETURN_IF_ERROR(device_->copy_on_device_async(landing_.address(), failed_word_, 4, stream));
  if (++steps_ % check_every_ != 0) return absl::OkStatus();

  absl::StatusOr<std::vector<std::string>> voted =
      group_->all_gather(seen_ ? std::string_view("1") : std::string_view("0"));
  if (!voted.ok()) {
    // A rank that cannot vote has lost a peer (its process ended) or its group: that peer's
    // exchanges will never come, so this rank stops here rather than step on with garbage.
    return absl::AbortedError(absl::StrCat(
        "the specialized decode stopped at step ", steps_,
        ": the fail-stop vote over the TP group failed (", voted.status().message(),
        "), so a TP rank is gone and its exchanges will never come; ",
        seen_ ? "this rank has given up a wait in a layer kernel already"
              : "this rank has not seen a wait give up yet, its next exchange would",
        "; hint: the rank's health records name the wait and the peer; a TP group does not "
        "outlive a rank, so restart the engine on every rank"));
  }
  const std::vector<std::string>& votes = *voted;
  std::vector<int> failed;
  for (size_t r = 0; r < votes.size(); ++r) {
    if (votes[r] != "0") failed.push_back(static_cast<int>(r));
  }
  if (failed.empty()) return absl::OkStatus();
  return absl::AbortedError(absl::StrCat(
      "the specialized decode stopped at step ", steps_, ": TP rank", failed.size() > 1 ? "s " : " ",
      absl::StrJoin(failed, ", "),
      " gave up a wait in a layer kernel (a peer or a program stalled past its timeout), so "
      "that step's outputs cannot be trusted; hint: the rank's health records name the wait; "
      "the FAILED word is sticky for the process, so restart the engine"));
}

}  // namespace monotile::runtime::decode
