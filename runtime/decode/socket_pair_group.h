// SocketPairGroup: two processes' Group over one end each of a socket pair, for the GPU tests whose
// two TP ranks are two forked processes sharing one GPU (peer_buffer_gpu_test, k2_tp_gpu_test,
// executor_tp_gpu_test), and run_forked_ranks, which forks them.
#pragma once

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/decode/group.h"

namespace monotile::runtime::decode {

// Two processes' group over one end each of a socket pair: every all_gather sends this rank's bytes
// (length first) and receives the other's, rank 0 sending first and rank 1 receiving first, so that
// bytes beyond the socket's buffer never leave both ranks blocked in a write.
class SocketPairGroup final : public Group {
 public:
  SocketPairGroup(int fd, int rank) : fd_(fd), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  absl::StatusOr<std::vector<std::string>> all_gather(std::string_view bytes) override {
    std::string other;
    if (rank_ == 0 && !send(bytes)) return absl::UnavailableError("the socket pair's write failed");
    if (!receive(other)) return absl::UnavailableError("the other rank closed the socket pair");
    if (rank_ == 1 && !send(bytes)) return absl::UnavailableError("the socket pair's write failed");
    std::vector<std::string> out(2);
    out[static_cast<size_t>(rank_)] = std::string(bytes);
    out[static_cast<size_t>(1 - rank_)] = std::move(other);
    return out;
  }

 private:
  bool send(std::string_view bytes) {
    const uint64_t length = bytes.size();
    return write_all(&length, sizeof length) && write_all(bytes.data(), bytes.size());
  }
  bool receive(std::string& bytes) {
    uint64_t length = 0;
    if (!read_all(&length, sizeof length)) return false;
    bytes.assign(length, '\0');
    return read_all(bytes.data(), bytes.size());
  }
  bool write_all(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t done = ::write(fd_, p, n);
      if (done <= 0) return false;
      p += done;
      n -= static_cast<size_t>(done);
    }
    return true;
  }
  bool read_all(void* data, size_t n) {
    char* p = static_cast<char*>(data);
    while (n > 0) {
      const ssize_t done = ::read(fd_, p, n);
      if (done <= 0) return false;
      p += done;
      n -= static_cast<size_t>(done);
    }
    return true;
  }
  int fd_;
  int rank_;
};

// What each of two forked ranks said: "" when it passed, "skip: <why>" where it cannot run, else
// what failed; and whether rank 1's process ended normally.
struct ForkedRanks {
  std::string rank0, rank1;
  bool rank1_exited = false;
};

// Runs `rank` as rank 0 in this process and as rank 1 in a forked child, their group a socket pair;
// the child hands its verdict back through a pipe and leaves with _exit (no test teardown). Fork
// before either rank touches a GPU driver. Closing rank 0's end when it returns lets a rank 1
// still waiting in the group see it closed instead of hanging.
inline ForkedRanks run_forked_ranks(const std::function<std::string(Group&)>& rank) {
  ForkedRanks out;
  int pair[2];
  int report[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0 || ::pipe(report) != 0) {
    out.rank0 = "socketpair or pipe failed";
    return out;
  }
  const pid_t child = ::fork();
  if (child < 0) {
    out.rank0 = "fork failed";
    return out;
  }
  if (child == 0) {
    ::close(pair[0]);
    ::close(report[0]);
    SocketPairGroup group(pair[1], 1);
    const std::string verdict = rank(group);
    [[maybe_unused]] ssize_t written = ::write(report[1], verdict.data(), verdict.size());
    ::_exit(0);
  }
  ::close(pair[1]);
  ::close(report[1]);
  {
    SocketPairGroup group(pair[0], 0);
    out.rank0 = rank(group);
  }
  ::close(pair[0]);
  char buffer[512];
  for (ssize_t n; (n = ::read(report[0], buffer, sizeof buffer)) > 0;)
    out.rank1.append(buffer, static_cast<size_t>(n));
  ::close(report[0]);
  int status = 0;
  ::waitpid(child, &status, 0);
  out.rank1_exited = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return out;
}

}  // namespace monotile::runtime::decode
