// SocketPairGroup: two processes' Group over one end each of a socket pair, for the GPU tests whose
// two TP ranks are two forked processes sharing one GPU (peer_buffer_gpu_test, k2_tp_gpu_test).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/decode/group.h"

namespace monotile::runtime::decode {

// Two processes' group over one end each of a socket pair: every all_gather writes this rank's
// bytes (length first) and reads the other's.
class SocketPairGroup final : public Group {
 public:
  SocketPairGroup(int fd, int rank) : fd_(fd), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return 2; }
  absl::StatusOr<std::vector<std::string>> all_gather(std::string_view bytes) override {
    const uint64_t length = bytes.size();
    if (!write_all(&length, sizeof length) || !write_all(bytes.data(), bytes.size())) {
      return absl::UnavailableError("the socket pair's write failed");
    }
    uint64_t theirs = 0;
    if (!read_all(&theirs, sizeof theirs))
      return absl::UnavailableError("the other rank closed the socket pair");
    std::string other(theirs, '\0');
    if (!read_all(other.data(), other.size()))
      return absl::UnavailableError("the other rank closed the socket pair");
    std::vector<std::string> out(2);
    out[static_cast<size_t>(rank_)] = std::string(bytes);
    out[static_cast<size_t>(1 - rank_)] = std::move(other);
    return out;
  }

 private:
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

}  // namespace monotile::runtime::decode
