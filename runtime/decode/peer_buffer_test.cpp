// The peer buffer on the CPU device, its ranks as threads (InProcessGroup), each with its own
// device: every rank writes into every peer's buffer and reads back what each wrote into its own; a
// rank that cannot export or map makes every rank refuse; closing ends the mappings.
#include "runtime/decode/peer_buffer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <vector>

#include "dsl/dsl.h"
#include "runtime/decode/in_process_group.h"
#include "runtime/decode/launch_counting_device.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {
namespace {

using ::testing::HasSubstr;

constexpr size_t kSlot = 16;

// Rank `from`'s 16 bytes for rank `to`.
std::array<uint8_t, kSlot> pattern(int from, int to) {
  std::array<uint8_t, kSlot> bytes{};
  for (size_t i = 0; i < kSlot; ++i) bytes[i] = static_cast<uint8_t>(0x40 + 16 * from + 4 * to + i);
  return bytes;
}

TEST(PeerBuffer, FourRanksEachWriteIntoEveryPeersBufferAndReadTheirOwn) {
  std::vector<absl::Status> statuses = InProcessGroup::run(4, [](Group& group) -> absl::Status {
    std::unique_ptr<Device> device = make_cpu_device();
    absl::StatusOr<std::unique_ptr<PeerBuffer>> peer =
        PeerBuffer::create(*device, group, 4 * kSlot);
    if (!peer.ok()) return peer.status();
    PeerBuffer& p = **peer;
    EXPECT_EQ(p.rank(), group.rank());
    EXPECT_EQ(p.size(), 4);
    EXPECT_EQ(p.address(group.rank()), p.local());
    std::vector<uint8_t> own(4 * kSlot, 0xff);
    EXPECT_TRUE(device->copy_to_host(own.data(), p.local(), own.size()).ok());
    EXPECT_EQ(own, std::vector<uint8_t>(4 * kSlot, 0)) << "a fresh peer buffer is zeroed";
    // Every rank has looked at its fresh buffer before any writes into it.
    if (absl::StatusOr<std::vector<std::string>> barrier = group.all_gather(""); !barrier.ok()) {
      return barrier.status();
    }
    // The table holds every rank's address as this device sees it.
    std::vector<int64_t> table(4);
    EXPECT_TRUE(device->copy_to_host(table.data(), p.table(), 4 * sizeof(int64_t)).ok());
    for (int r = 0; r < 4; ++r)
      EXPECT_EQ(static_cast<DevicePtr>(table[static_cast<size_t>(r)]), p.address(r));
    // Rank r writes its slot of every rank's buffer (its own included), through this device.
    for (int to = 0; to < 4; ++to) {
      std::array<uint8_t, kSlot> bytes = pattern(group.rank(), to);
      absl::Status written = device->copy_to_device(
          p.address(to) + kSlot * static_cast<size_t>(group.rank()), bytes.data(), kSlot);
      if (!written.ok()) return written;
    }
    if (absl::StatusOr<std::vector<std::string>> barrier = group.all_gather(""); !barrier.ok())
      return barrier.status();
    EXPECT_TRUE(device->copy_to_host(own.data(), p.local(), own.size()).ok());
    for (int from = 0; from < 4; ++from) {
      std::array<uint8_t, kSlot> want = pattern(from, group.rank());
      EXPECT_EQ(0, std::memcmp(own.data() + kSlot * static_cast<size_t>(from), want.data(), kSlot))
          << "rank " << group.rank() << "'s slot of rank " << from;
    }
    // Nothing is freed while a peer may still write: every rank closes after the last barrier.
    if (absl::StatusOr<std::vector<std::string>> barrier = group.all_gather(""); !barrier.ok())
      return barrier.status();
    p.close();
    return absl::OkStatus();
  });
  for (const absl::Status& status : statuses) EXPECT_TRUE(status.ok()) << status;
}

// What an exchange does on the interpreter: each rank's kernel takes every rank's buffer as a
// pointer parameter (the DSL makes no pointer from an integer, so the table's addresses arrive as
// parameters) and stores into each at its own slot; each rank then finds every rank's word in its
// own.
dsl::Program peer_put(int ranks) {
  using namespace dsl;
  Builder b("peer_put", {.num_warps = 1});
  std::vector<Value> peers;
  for (int r = 0; r < ranks; ++r) peers.push_back(b.arg("peer" + std::to_string(r), ptr(i32)));
  auto rank = b.arg("rank", i32);
  for (int r = 0; r < ranks; ++r) store(peers[static_cast<size_t>(r)] + rank, rank + 100 + 10 * r);
  return b.finish();
}

TEST(PeerBuffer, AnInterpretedKernelStoresIntoEveryRanksBuffer) {
  constexpr int kRanks = 3;
  auto catalog = std::make_shared<ProgramCatalog>();
  const std::string code = catalog->add(peer_put(kRanks));
  std::vector<absl::Status> statuses =
      InProcessGroup::run(kRanks, [&](Group& group) -> absl::Status {
        std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(catalog));
        MT_ASSIGN_OR_RETURN(std::unique_ptr<PeerBuffer> peer,
                            PeerBuffer::create(*device, group, 64));
        MT_ASSIGN_OR_RETURN(Module module, device->load_module(code, "peer_put"));
        MT_ASSIGN_OR_RETURN(Function function, device->function(module, "peer_put"));
        MT_ASSIGN_OR_RETURN(Stream stream, device->create_stream());
        std::vector<DevicePtr> addresses(kRanks);
        std::vector<void*> args;
        for (int r = 0; r < kRanks; ++r) {
          addresses[static_cast<size_t>(r)] = peer->address(r);
          args.push_back(&addresses[static_cast<size_t>(r)]);
        }
        int32_t rank = group.rank();
        args.push_back(&rank);
        MT_RETURN_IF_ERROR(
            device->launch(function, {{1, 1, 1}, {32, 1, 1}, 0}, args.data(), stream));
        MT_RETURN_IF_ERROR(device->synchronize(stream));
        MT_RETURN_IF_ERROR(group.all_gather("").status());
        std::vector<int32_t> own(kRanks);
        MT_RETURN_IF_ERROR(
            device->copy_to_host(own.data(), peer->local(), sizeof(int32_t) * kRanks));
        for (int from = 0; from < kRanks; ++from) {
          EXPECT_EQ(own[static_cast<size_t>(from)], from + 100 + 10 * group.rank())
              << "rank " << group.rank() << "'s word from rank " << from;
        }
        return group.all_gather("").status();  // nobody frees while another may still read
      });
  for (const absl::Status& status : statuses) EXPECT_TRUE(status.ok()) << status;
}

TEST(PeerBuffer, ClosingUnmapsThePeersBuffers) {
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [](Group& group) -> absl::Status {
    std::unique_ptr<Device> device = make_cpu_device();
    absl::StatusOr<std::unique_ptr<PeerBuffer>> peer = PeerBuffer::create(*device, group, 64);
    if (!peer.ok()) return peer.status();
    const DevicePtr other = (*peer)->address(1 - group.rank());
    const uint8_t byte = 7;
    EXPECT_TRUE(device->copy_to_device(other, &byte, 1).ok())
        << "mapped: the peer's buffer is this device's to use";
    if (absl::StatusOr<std::vector<std::string>> barrier = group.all_gather(""); !barrier.ok())
      return barrier.status();
    (*peer)->close();
    (*peer)->close();  // idempotent
    absl::Status after = device->copy_to_device(other, &byte, 1);
    EXPECT_EQ(after.code(), absl::StatusCode::kInvalidArgument)
        << "unmapped: outside every allocation";
    EXPECT_THAT(std::string(after.message()), HasSubstr("outside every allocation"));
    return group.all_gather("").status();  // the peer frees only after both have looked
  });
  for (const absl::Status& status : statuses) EXPECT_TRUE(status.ok()) << status;
}

// A device whose map_peer fails, as a driver refusing a handle would.
class MapFailingDevice final : public LaunchCountingDevice {
 public:
  MapFailingDevice() : LaunchCountingDevice(make_cpu_device()) {}
  absl::StatusOr<PeerMapping> map_peer(std::string_view, size_t) override {
    return absl::InternalError("the driver refused the handle");
  }
};

// A device that shares no memory (Device's default).
class PlainDevice final : public LaunchCountingDevice {
 public:
  PlainDevice() : LaunchCountingDevice(make_cpu_device()) {}
  absl::StatusOr<ExportedBuffer> allocate_exportable(size_t bytes) override {
    return Device::allocate_exportable(bytes);
  }
};

TEST(PeerBuffer, ARankThatCannotMapMakesEveryRankRefuse) {
  std::vector<std::string> messages(3);
  std::vector<absl::Status> statuses = InProcessGroup::run(3, [&](Group& group) -> absl::Status {
    std::unique_ptr<Device> device =
        group.rank() == 2 ? std::unique_ptr<Device>(new MapFailingDevice()) : make_cpu_device();
    absl::StatusOr<std::unique_ptr<PeerBuffer>> peer = PeerBuffer::create(*device, group, 256);
    messages[static_cast<size_t>(group.rank())] = std::string(peer.status().message());
    return peer.status();
  });
  for (const absl::Status& status : statuses)
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      messages[2],
      HasSubstr("the specialized decode does not support the peer buffers: rank 2 could not map "
                "rank 0's peer buffer: the driver refused the handle"));
  for (int rank : {0, 1}) {
    EXPECT_THAT(messages[static_cast<size_t>(rank)], HasSubstr("another TP rank refused (rank 2)"))
        << rank;
  }
}

TEST(PeerBuffer, ADeviceThatSharesNoMemoryRefusesOnEveryRank) {
  std::vector<std::string> messages(2);
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [&](Group& group) -> absl::Status {
    std::unique_ptr<Device> device =
        group.rank() == 1 ? std::unique_ptr<Device>(new PlainDevice()) : make_cpu_device();
    absl::StatusOr<std::unique_ptr<PeerBuffer>> peer = PeerBuffer::create(*device, group, 256);
    messages[static_cast<size_t>(group.rank())] = std::string(peer.status().message());
    return peer.status();
  });
  for (const absl::Status& status : statuses)
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      messages[1],
      HasSubstr("rank 1 could not export its peer buffer: cpu device 0 \"cpu interpreter\" "
                "(cpu) cannot export 256 bytes to other ranks: it shares no memory with them"));
  EXPECT_THAT(messages[0], HasSubstr("another TP rank refused (rank 1)"));
}

TEST(PeerBuffer, RanksOfDifferentSizesRefuse) {
  std::vector<std::string> messages(2);
  std::vector<absl::Status> statuses = InProcessGroup::run(2, [&](Group& group) -> absl::Status {
    std::unique_ptr<Device> device = make_cpu_device();
    absl::StatusOr<std::unique_ptr<PeerBuffer>> peer =
        PeerBuffer::create(*device, group, group.rank() == 0 ? 256 : 512);
    messages[static_cast<size_t>(group.rank())] = std::string(peer.status().message());
    return peer.status();
  });
  for (const absl::Status& status : statuses)
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      messages[0],
      HasSubstr("rank 1's peer buffer is 512 bytes, rank 0's 256: every rank must make the same"));
}

TEST(CpuDevicePeerMemory, RefusesAHandleOfAProcessGoneOrAnotherDevice) {
  std::unique_ptr<Device> device = make_cpu_device();
  // No process has the largest pid Linux can give.
  absl::StatusOr<PeerMapping> mapped = device->map_peer("cpu 4194305 4096 64 3", 64);
  EXPECT_EQ(mapped.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      std::string(mapped.status().message()),
      HasSubstr("a peer buffer of process 4194305 given to cpu device 0 \"cpu interpreter\" "
                "(cpu) of process "));
  EXPECT_THAT(std::string(mapped.status().message()),
              HasSubstr(": mapping /proc/4194305/fd/3 failed: No such file or directory; hint: the "
                        "CPU device's ranks are threads of one process or processes of one user on "
                        "this machine"));
  mapped = device->map_peer(std::string(64, '\x11'), 64);
  EXPECT_THAT(std::string(mapped.status().message()),
              HasSubstr("a peer buffer's handle of 64 bytes given to cpu device 0 \"cpu "
                        "interpreter\" (cpu): not the CPU device's (\"cpu <pid> <address> <bytes> "
                        "<fd>\")"));
}

// Ranks as processes (mpirun): a forked process maps this one's buffer through its handle and
// writes it, and this process reads what it wrote; then it writes back and the child checks.
TEST(CpuDevicePeerMemory, AnotherProcessMapsTheBuffer) {
  std::unique_ptr<Device> device = make_cpu_device();
  absl::StatusOr<ExportedBuffer> exported = device->allocate_exportable(4096);
  ASSERT_TRUE(exported.ok()) << exported.status();
  int to_child[2], to_parent[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(to_parent), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child's own device maps the parent's buffer: a new process's view.
    std::unique_ptr<Device> own = make_cpu_device();
    absl::StatusOr<PeerMapping> mapped = own->map_peer(exported->handle, 4096);
    if (!mapped.ok()) _exit(2);
    const uint32_t word = 0x5eed1234;
    if (!own->copy_to_device(mapped->address() + 64, &word, 4).ok()) _exit(3);
    char go = 0;
    if (write(to_parent[1], &go, 1) != 1 || read(to_child[0], &go, 1) != 1) _exit(4);
    uint32_t back = 0;
    if (!own->copy_to_host(&back, mapped->address() + 128, 4).ok()) _exit(5);
    _exit(back == 0xfeedbeef ? 0 : 6);
  }
  char go = 0;
  ASSERT_EQ(read(to_parent[0], &go, 1), 1);
  uint32_t word = 0;
  ASSERT_TRUE(device->copy_to_host(&word, exported->buffer.address() + 64, 4).ok());
  EXPECT_EQ(word, 0x5eed1234u);
  const uint32_t back = 0xfeedbeef;
  ASSERT_TRUE(device->copy_to_device(exported->buffer.address() + 128, &back, 4).ok());
  ASSERT_EQ(write(to_child[1], &go, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

}  // namespace
}  // namespace monotile::runtime::decode
