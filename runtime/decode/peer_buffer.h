// PeerBuffer: the TP group's peer memory (seed_source.md 1.12). Each rank allocates one exportable
// device buffer and publishes its handle through the Group; each maps every other rank's and builds
// a device table of the ranks' addresses, which the in-kernel exchanges read. Made collectively, so
// a rank that cannot export or map refuses through agree and no rank is left waiting for it.
// Nothing is zeroed between steps: the buffers start zeroed and the exchanges' tags tell steps
// apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/decode/group.h"
#include "runtime/device.h"

namespace monotile::runtime::decode {

class PeerBuffer {
 public:
  // On every rank of `group` at the same point, with the same `bytes`. InvalidArgument on every
  // rank when any rank could not export its buffer, map another's, or build its table, or when the
  // ranks' sizes differ: that rank's reasons, "another TP rank refused (rank 2)" on the others. A
  // failing all_gather comes back with its code. On a refusal everything made here is given back.
  static absl::StatusOr<std::unique_ptr<PeerBuffer>> create(Device& device, Group& group,
                                                            size_t bytes);
  ~PeerBuffer() { close(); }

  // Unmaps the other ranks' buffers, frees the table and this rank's buffer; idempotent. Only once
  // no kernel on any rank can touch the buffers (after every rank's last step has synchronized).
  void close();

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(addresses_.size()); }
  size_t bytes() const { return bytes_; }
  // This rank's own buffer.
  DevicePtr local() const { return local_.buffer.address(); }
  // Rank `rank`'s buffer as this device addresses it (local() for this rank).
  DevicePtr address(int rank) const { return addresses_[static_cast<size_t>(rank)]; }
  // i64 [size()] on the device: address(r) at r.
  DevicePtr table() const { return table_.address(); }

 private:
  PeerBuffer() = default;
  int rank_ = 0;
  size_t bytes_ = 0;
  ExportedBuffer local_;
  std::vector<PeerMapping> peers_;  // every other rank's buffer, mapped here
  std::vector<DevicePtr> addresses_;
  DeviceBuffer table_;
};

}  // namespace monotile::runtime::decode
