// SocketPairGroup when the other rank's process is gone: a send to it and a receive from it (one
// already blocked when the process is killed) return Unavailable saying so, never a SIGPIPE or a
// hang.
#include "runtime/decode/socket_pair_group.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace monotile::runtime::decode {
namespace {

TEST(SocketPairGroup, ASendToAClosedPeerFailsWithoutASigpipe) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  ::close(pair[1]);
  SocketPairGroup group(pair[0], 0);  // rank 0 sends first
  absl::StatusOr<std::vector<std::string>> got = group.all_gather("vote");
  ::close(pair[0]);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(got.status().message(),
            "TP rank 0 could not send to TP rank 1: its end of the socket pair is closed (its "
            "process ended or left the group)");
}

TEST(SocketPairGroup, AReceiveFromAPeerKilledMeanwhileEndsWithAnError) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  const pid_t peer = ::fork();
  ASSERT_GE(peer, 0);
  if (peer == 0) {  // rank 0, holding its end, never sends
    ::close(pair[1]);
    for (;;) ::pause();
  }
  ::close(pair[0]);
  // Killed while this rank is blocked receiving (rank 1 receives first).
  std::thread killer([peer] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::kill(peer, SIGKILL);
  });
  SocketPairGroup group(pair[1], 1);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<std::string>> got = group.all_gather("vote");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  killer.join();
  ::close(pair[1]);
  int status = 0;
  ::waitpid(peer, &status, 0);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(got.status().message(),
            "TP rank 1 could not receive from TP rank 0: its end of the socket pair is closed "
            "(its process ended or left the group)");
  EXPECT_LT(seconds, 10) << "the receive outlived its peer";
}

}  // namespace
}  // namespace monotile::runtime::decode
