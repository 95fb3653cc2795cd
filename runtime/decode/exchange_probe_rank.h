// One TP rank's exchange probe (kernels/k3/exchange_probe.h) on its device: the group's peer
// buffer, the launch words, the probe's program at each row count, its source and output rows. The
// interpreter test holds its bits to the host's sum; exchange_bench times it on one GPU.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "jit/jit.h"
#include "kernels/k3/exchange_probe.h"
#include "runtime/decode/group.h"
#include "runtime/decode/peer_buffer.h"
#include "runtime/device.h"
#include "runtime/kernel.h"
#include "runtime/launch_state.h"

namespace monotile::runtime::decode {

class ExchangeProbeRank {
 public:
  // Collective over `group` (the peer buffer): every rank at the same point with the same
  // `hidden` and `programs`. Loads the probe for each of `tokens` (through `jit` on a GPU).
  static absl::StatusOr<std::unique_ptr<ExchangeProbeRank>> create(Device& device, Group& group,
                                                                   jit::Jit& jit,
                                                                   const std::vector<int>& tokens,
                                                                   int64_t hidden, int programs,
                                                                   int64_t wait_ns);

  // This rank's partial rows [T, H] (bf16 bits), for the probe of T rows.
  absl::Status write_source(int tokens, const std::vector<uint16_t>& bits);
  // The reduced rows' buffer filled with a NaN (0x7fc1), for a test that each launch writes it all.
  absl::Status poison_reduced();
  // Sets the next epoch (each launch its own tag), then launches the probe of T rows on `stream`.
  // Every rank launches its probes in the same order.
  absl::Status launch(int tokens, Stream& stream);
  // `count` exchanges back to back on `stream`, each after a launch of step_begin (the epoch += 1
  // on the device, so no host write waits between them): what a loop of all-reduces costs a
  // launch, timed by events around the whole chain. Every rank launches the same chains.
  absl::Status launch_chain(int tokens, int count, Stream& stream);
  // After the launch finished: the reduced rows [T, H] (bf16 bits), and each program's global
  // timer on entering and on leaving ([programs, 2]).
  absl::StatusOr<std::vector<uint16_t>> reduced(int tokens) const;
  absl::StatusOr<std::vector<int64_t>> clock() const;
  // The epoch word as the device holds it (after the launches finished): the host's count of
  // launches, chains' bumps included.
  absl::StatusOr<int32_t> device_epoch() const;
  // Takes the device's epoch as the next launch's base: after a graph of chains was replayed (its
  // capture counted exchanges that did not run, its replays ran ones the host did not count).
  absl::Status adopt_device_epoch();
  // OK, or the waits that gave up (LaunchState::check_health).
  absl::Status check_health() const;

  int programs() const { return programs_; }
  // This rank's source rows, and rank r's peer buffer as this device addresses it.
  DevicePtr source() const { return src_.address(); }
  DevicePtr peer(int r) const { return peers_->address(r); }

 private:
  ExchangeProbeRank() = default;
  // The probe's launch with this rank's arguments, at the epoch the device holds.
  absl::Status launch_probe(const Kernel& kernel, Stream& stream);
  Device* device_ = nullptr;
  int tp_ = 0, rank_ = 0, programs_ = 0;
  int64_t hidden_ = 0, wait_ns_ = 0;
  int32_t epoch_ = 0;
  std::unique_ptr<PeerBuffer> peers_;
  std::unique_ptr<LaunchState> state_;
  DeviceBuffer src_, out_, words_, clock_;
  std::map<int, Kernel> kernels_;
  std::optional<Kernel> step_begin_;
};

}  // namespace monotile::runtime::decode
