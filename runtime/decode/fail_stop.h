// FailStop: every TP rank stops at the same step once any rank's kernels gave up a wait. A kernel
// that times out sets the sticky FAILED word of its rank's health buffer and returns, so the step's
// outputs are garbage while the host carries on; a rank that raised alone would leave its peers
// stuck in the next collective, so the ranks vote, every `check_every` steps, and all raise at once.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/decode/group.h"
#include "runtime/device.h"

namespace monotile::runtime::decode {

class FailStop {
 public:
  // `failed_word` is the device address of the rank's FAILED word (i32, health word 0).
  static absl::StatusOr<FailStop> create(Device& device, DevicePtr failed_word, Group& group,
                                         int check_every = 16);

  // Once per executed step on every rank, after the step's launches were queued on `stream`. The
  // host never waits for the device: each call queues a copy of the FAILED word into pinned host
  // memory and reads what the copies queued so far have left there (the newest that landed), OR-ed
  // into a sticky `seen`. Every check_every-th call votes over the group; if any rank has seen a
  // failure every rank returns the same Aborted error naming those ranks. While the host captures
  // a graph (`capturing`), it does nothing and the step is not counted. A vote the group cannot
  // take (a peer's process ended, so its all_gather fails) returns Aborted on this rank, saying so
  // and whether this rank saw a wait give up: the ranks left stop instead of waiting for ever.
  absl::Status after_step(Stream& stream, bool capturing = false);

  int64_t steps() const { return steps_; }
  int check_every() const { return check_every_; }

 private:
  FailStop() = default;
  Device* device_ = nullptr;
  Group* group_ = nullptr;
  DevicePtr failed_word_ = 0;
  HostMappedBuffer landing_;  // i32 [1]: where the copies land
  bool seen_ = false;
  int64_t steps_ = 0;
  int check_every_ = 16;
};

}  // namespace monotile::runtime::decode
