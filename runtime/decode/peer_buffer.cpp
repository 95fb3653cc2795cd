// The peer buffer's handshake: export, gather "<bytes> <handle>" from every rank, map the others',
// upload the table, then one agreement, which every rank reaches whatever failed on the way.
#include "runtime/decode/peer_buffer.h"

#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "runtime/decode/agree.h"

namespace monotile::runtime::decode {

absl::StatusOr<std::unique_ptr<PeerBuffer>> PeerBuffer::create(Device& device, Group& group,
                                                               size_t bytes) {
  std::unique_ptr<PeerBuffer> peer(new PeerBuffer());
  peer->rank_ = group.rank();
  peer->bytes_ = bytes;
  std::vector<std::string> reasons;
  absl::StatusOr<ExportedBuffer> exported = device.allocate_exportable(bytes);
  if (exported.ok()) {
    peer->local_ = *std::move(exported);
  } else {
    reasons.push_back(absl::StrCat(
        "rank ", group.rank(), " could not export its peer buffer: ", exported.status().message()));
  }
  // Every rank gathers, a failed one too (with nothing to publish), so that none waits alone.
  absl::StatusOr<std::vector<std::string>> published = group.all_gather(
      exported.ok() ? absl::StrCat(bytes, " ", peer->local_.handle) : std::string());
  if (!published.ok()) {
    return absl::Status(published.status().code(),
                        absl::StrCat("TP ranks could not exchange their peer buffers' handles: ",
                                     published.status().message()));
  }
  const int size = group.size();
  peer->addresses_.assign(static_cast<size_t>(size), 0);
  for (int r = 0; r < size && reasons.empty(); ++r) {
    if (r == group.rank()) {
      peer->addresses_[static_cast<size_t>(r)] = peer->local();
      continue;
    }
    const std::string& from = (*published)[static_cast<size_t>(r)];
    const size_t space = from.find(' ');
    uint64_t their_bytes = 0;
    if (from.empty() || space == std::string::npos ||
        !absl::SimpleAtoi(from.substr(0, space), &their_bytes)) {
      continue;  // that rank could not export; it refuses with its own reason
    }
    if (their_bytes != bytes) {
      reasons.push_back(absl::StrCat("rank ", r, "'s peer buffer is ", their_bytes, " bytes, rank ",
                                     group.rank(), "'s ", bytes,
                                     ": every rank must make the same"));
      continue;
    }
    absl::StatusOr<PeerMapping> mapped =
        device.map_peer(std::string_view(from).substr(space + 1), bytes);
    if (!mapped.ok()) {
      reasons.push_back(absl::StrCat("rank ", group.rank(), " could not map rank ", r,
                                     "'s peer buffer: ", mapped.status().message()));
      continue;
    }
    peer->addresses_[static_cast<size_t>(r)] = mapped->address();
    peer->peers_.push_back(*std::move(mapped));
  }
  if (reasons.empty()) {
    std::vector<int64_t> table(peer->addresses_.begin(), peer->addresses_.end());
    absl::StatusOr<DeviceBuffer> made = device.allocate(table.size() * sizeof(int64_t));
    absl::Status copied =
        made.ok() ? device.copy_to_device(made->address(), table.data(), table.size() * 8)
                  : made.status();
    if (copied.ok()) {
      peer->table_ = *std::move(made);
    } else {
      reasons.push_back(
          absl::StrCat("rank ", group.rank(),
                       " could not make its table of peer addresses: ", copied.message()));
    }
  }
  absl::Status agreed = agree(reasons, group, "the peer buffers");
  if (!agreed.ok()) return agreed;  // peer's destructor gives back what was made
  return peer;
}

void PeerBuffer::close() {
  table_.reset();
  peers_.clear();
  local_.buffer.reset();
  addresses_.clear();
}

}  // namespace monotile::runtime::decode
