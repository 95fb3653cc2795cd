// The peer buffer on a GPU through the driver's IPC handles: two ranks as two processes of this
// test (forked before either touches the driver, since a driver does not survive a fork) sharing
// the first GPU, their group a socket pair. Each rank writes into the other's buffer and reads back
// what the other wrote into its own, then both close. Skips without a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/decode/peer_buffer.h"
#include "runtime/decode/socket_pair_group.h"
#include "runtime/discovery.h"

namespace monotile::runtime::decode {
namespace {

// One rank's part: "" when it passed, "skip: <why>" without a GPU, else what failed.
std::string run_rank(Group& group) {
  Discovery found = discover_devices();
  std::unique_ptr<Device> gpu = take_first_gpu(found);
  if (!gpu) return absl::StrCat("skip: ", no_gpu_reason(found));
  constexpr size_t kBytes = 1 << 20;
  absl::StatusOr<std::unique_ptr<PeerBuffer>> peer = PeerBuffer::create(*gpu, group, kBytes);
  if (!peer.ok()) return std::string(peer.status().message());
  PeerBuffer& p = **peer;
  std::vector<uint32_t> own(kBytes / 4, 1);
  if (!gpu->copy_to_host(own.data(), p.local(), kBytes).ok())
    return "reading the own buffer failed";
  if (own != std::vector<uint32_t>(kBytes / 4, 0)) return "a fresh peer buffer is not zeroed";
  if (!group.all_gather("").ok()) return "the barrier before writing failed";  // both looked first
  // Rank r writes 0x1000 + r into every word of the second half of the other rank's buffer...
  const int other = 1 - group.rank();
  std::vector<uint32_t> words(kBytes / 8, static_cast<uint32_t>(0x1000 + group.rank()));
  if (absl::Status s = gpu->copy_to_device(p.address(other) + kBytes / 2, words.data(), kBytes / 2);
      !s.ok()) {
    return absl::StrCat("writing the other rank's buffer: ", s.message());
  }
  if (!gpu->synchronize().ok() || !group.all_gather("").ok())
    return "the barrier after writing failed";
  // ...and finds the other's words in its own, its first half untouched.
  if (!gpu->copy_to_host(own.data(), p.local(), kBytes).ok())
    return "reading the own buffer failed";
  if (std::vector<uint32_t>(own.begin(), own.begin() + kBytes / 8) !=
      std::vector<uint32_t>(kBytes / 8, 0)) {
    return "the first half was written";
  }
  if (std::vector<uint32_t>(own.begin() + kBytes / 8, own.end()) !=
      std::vector<uint32_t>(kBytes / 8, static_cast<uint32_t>(0x1000 + other))) {
    return absl::StrCat("the second half does not hold rank ", other, "'s words");
  }
  std::vector<int64_t> table(2);
  if (!gpu->copy_to_host(table.data(), p.table(), sizeof(int64_t) * 2).ok())
    return "reading the table failed";
  if (static_cast<DevicePtr>(table[static_cast<size_t>(group.rank())]) != p.local())
    return "the table's own entry";
  if (!group.all_gather("").ok())
    return "the barrier before closing failed";  // neither frees while the other reads
  p.close();
  return "";
}

TEST(PeerBufferGpu, TwoProcessesSharingOneGpuWriteIntoEachOthersBuffers) {
  const ForkedRanks verdicts = run_forked_ranks([&](Group& group) { return run_rank(group); });
  if (verdicts.rank0.rfind("skip: ", 0) == 0) GTEST_SKIP() << verdicts.rank0.substr(6);
  EXPECT_EQ(verdicts.rank0, "") << "rank 0";
  EXPECT_EQ(verdicts.rank1, "") << "rank 1";
  EXPECT_TRUE(verdicts.rank1_exited) << "rank 1's process ended abnormally";
}

}  // namespace
}  // namespace monotile::runtime::decode
