// What the host bindings of the persistent layer kernels (k1_launch.h, k2_launch.h) share: the
// program loaded as a Kernel on a device (the interpreter's catalog on the CPU, the JIT elsewhere),
// and the words a launch owns beside its scratch: the health words, the alarm and the epoch, zeroed
// when made. After a launch, a wait that gave up is read back from its health record and turned
// into an error naming the region, the flag and the tags.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dsl/ir.h"
#include "jit/jit.h"
#include "runtime/device.h"
#include "runtime/kernel.h"

namespace monotile::runtime {

// `program` as a Kernel on `device`: on a GPU lowered and compiled through `jit` (the kernel
// cache), on the CPU device added to ProgramCatalog::process(), which discover_devices()'s CPU
// device loads from.
absl::StatusOr<Kernel> load_program(Device& device, dsl::Program program, jit::Jit& jit);

// `bytes` zeroed from `address`: on `stream` when given (ordered with the host's work there),
// else synchronously.
absl::Status zero_bytes(Device& device, DevicePtr address, size_t bytes, Stream* stream);

// A wait that gave up, as its health record holds it (k1.h health_words).
struct WaitRecord {
  int32_t region = 0;  // the kernel's region enum (K1Region, K2Region)
  int32_t index = 0;   // the first stale flag's lane
  int32_t expected = 0;
  int32_t seen = 0;
  int32_t program = 0;
};

class LaunchState {
 public:
  // The health words for `programs` instances (>= 1), the alarm and the epoch, all zeroed.
  // `kernel` ("K1", "K2", "the layer kernels") names what would run in the refusal of programs < 1.
  static absl::StatusOr<LaunchState> create(Device& device, int programs, std::string_view kernel);

  // Writes the epoch word (synchronous).
  absl::Status set_epoch(int32_t epoch);
  // Reads the epoch word (synchronous: after the launches that bump it have finished).
  absl::StatusOr<int32_t> read_epoch() const;

  // After the launch has finished: the records of every wait that gave up (empty when word 0 is
  // zero), or the copy's error.
  absl::StatusOr<std::vector<WaitRecord>> failed_waits() const;

  // OK, or Internal: "<who> over N programs: a hand-off wait gave up after W ms: program p waited
  // on <region> (region r) flag i: expected tag e, saw s; ...; hint: ...", `who` naming the
  // launches (K1 "k3_k1_..."), `region_name` a region id ("unknown region" when it returns empty).
  // A region for which `peer_region` is true is a wait on another TP rank's share: its line says
  // "from TP rank i" (the record's index) and the hint names the peer.
  absl::Status check_health(std::string_view who, int64_t wait_ns,
                            const std::function<std::string(int32_t)>& region_name,
                            const std::function<bool(int32_t)>& peer_region = nullptr) const;

  int programs() const { return programs_; }
  // i32 [health_words(programs)]: word 0 FAILED, then one 8-word record per program.
  DevicePtr health() const { return health_.address(); }
  DevicePtr alarm() const { return words_.address(); }
  DevicePtr epoch() const { return words_.address() + 4; }

  // The TP group's peer buffers (runtime/decode/peer_buffer.h) as this device addresses them, in
  // rank order, for K2's exchanges across ranks (k2.h: peer{r}); none at TP 1.
  void set_peers(std::vector<DevicePtr> peers) { peers_ = std::move(peers); }
  const std::vector<DevicePtr>& peers() const { return peers_; }

 private:
  LaunchState() = default;
  Device* device_ = nullptr;
  int programs_ = 0;
  DeviceBuffer health_;
  DeviceBuffer words_;  // i32 [2]: the alarm, then the epoch
  std::vector<DevicePtr> peers_;
};

}  // namespace monotile::runtime
