// SocketPairGroup: two processes' Group over one end each of a socket pair, for the GPU tests whose
// two TP ranks are two forked processes sharing one GPU (peer_buffer_gpu_test, k2_tp_gpu_test,
// executor_tp_gpu_test), and run_forked_ranks, which forks them. A rank whose peer process is gone
// gets an error from its next all_gather, never a hang nor a SIGPIPE: the peer's death closes its
// end (no other process holds it: both ends are close-on-exec) and a read of it ends.
#pragma once

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "runtime/decode/group.h"

namespace monotile::runtime::decode {

// Two processes' group over one end each of a socket pair: every all_gather sends this rank's bytes
// (length first) and receives the other's, rank 0 sending first and rank 1 receiving first, so that
// bytes beyond the socket's buffer never leave both ranks blocked in a write. Unavailable when the
// other rank's process has ended (or closed its end): its message says which way failed and why.
class SocketPairGroup final : public Group {
 public:
  SocketPairGroup(int fd, int rank) : fd_(fd), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  absl::StatusOr<std::vector<std::string>> all_gather(std::string_view bytes) override {
    std::string other;
    if (rank_ == 0 && !send(bytes)) return failed("send to");
    if (!receive(other)) return failed("receive from");
    if (rank_ == 1 && !send(bytes)) return failed("send to");
    std::vector<std::string> out(2);
    out[static_cast<size_t>(rank_)] = std::string(bytes);
    out[static_cast<size_t>(1 - rank_)] = std::move(other);
    return out;
  }

 private:
  // What a send or receive that gave up saw: the peer's end closed (its process ended: a read
  // returns 0, a write EPIPE) or another error.
  absl::Status failed(const char* way) const {
    const std::string why =
        error_ == 0 || error_ == EPIPE || error_ == ECONNRESET
            ? "its end of the socket pair is closed (its process ended or left the group)"
            : absl::StrCat("the socket pair failed: ", std::strerror(error_));
    return absl::UnavailableError(
        absl::StrCat("TP rank ", rank_, " could not ", way, " TP rank ", 1 - rank_, ": ", why));
  }
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
  // MSG_NOSIGNAL: a write to a dead peer's socket returns EPIPE instead of killing this process
  // with SIGPIPE. A call a signal interrupted is retried.
  bool write_all(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t done = ::send(fd_, p, n, MSG_NOSIGNAL);
      if (done < 0 && errno == EINTR) continue;
      if (done <= 0) {
        error_ = done < 0 ? errno : EPIPE;
        return false;
      }
      p += done;
      n -= static_cast<size_t>(done);
    }
    return true;
  }
  bool read_all(void* data, size_t n) {
    char* p = static_cast<char*>(data);
    while (n > 0) {
      const ssize_t done = ::read(fd_, p, n);
      if (done < 0 && errno == EINTR) continue;
      if (done <= 0) {
        error_ = done < 0 ? errno : 0;
        return false;
      }
      p += done;
      n -= static_cast<size_t>(done);
    }
    return true;
  }
  int fd_;
  int rank_;
  int error_ = 0;  // the errno of the last send or receive that gave up (0: the peer's end closed)
};

// What each of two forked ranks said: "" when it passed, "skip: <why>" where it cannot run, else
// what failed; whether rank 1's process ended normally, and the signal that ended it otherwise.
struct ForkedRanks {
  std::string rank0, rank1;
  bool rank1_exited = false;
  int rank1_signal = 0;
};

// Runs `rank` as rank 0 in this process and as rank 1 in a forked child, their group a socket pair;
// the child hands its verdict back through a pipe and leaves with _exit (no test teardown). Fork
// before either rank touches a GPU driver. Closing rank 0's end when it returns lets a rank 1
// still waiting in the group see it closed instead of hanging; rank 1's process ending (however:
// killed too) does the same for rank 0. Both ends and the pipe are close-on-exec, so that no
// process either rank starts (a compile worker) holds an end open past its rank's death.
inline ForkedRanks run_forked_ranks(const std::function<std::string(Group&)>& rank) {
  ForkedRanks out;
  int pair[2];
  int report[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0 ||
      ::pipe2(report, O_CLOEXEC) != 0) {
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
  out.rank1_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return out;
}

}  // namespace monotile::runtime::decode
