// What the layer benchmarks leave in L2 before each timed launch. A 256 MiB buffer pushes the
// kernel's own inputs out of the 50 MB L2, either
//   - read (the default): a kernel reads the buffer, so L2 is left full of clean lines, as in a
//     decode step, where the kernel before a layer's K1 or K2 mostly read weights; or
//   - written (a memset, the benchmarks' only flush before): L2 is left full of dirty lines, whose
//     write-back to HBM then competes with the timed kernel's first reads, up to 50 MB of it.
// Both are cold for the timed kernel's weights; they differ only in that write-back, which no
// decode step pays.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dsl/ir.h"
#include "runtime/device.h"
#include "runtime/kernel.h"

namespace monotile::kernels::k3 {

enum class L2Flush { kNone, kRead, kWrite };

inline constexpr int64_t kL2FlushBytes = int64_t{256} << 20;

// "read", "write" or "none" (--warm); nullopt for anything else.
std::optional<L2Flush> parse_l2_flush(const std::string& text);
const char* l2_flush_name(L2Flush flush);
// A benchmark's `--flush VALUE`: read or write; anything else prints "TOOL: --flush VALUE:
// expected read or write" on stderr and gives nullopt (--warm is the way to flush nothing).
std::optional<L2Flush> parse_flush_option(const std::string& tool, const std::string& value);
// The words a run's header prints: "a 256 MiB read (cold, clean L2) before each launch", ...
std::string l2_flush_description(L2Flush flush);

// The read: each program sums kL2ReadBlock i32 of `src` and stores the sum at out[program], so
// that the loads are needed (kL2FlushBytes / 4 / kL2ReadBlock programs).
inline constexpr int64_t kL2ReadBlock = 16384;
dsl::Program l2_read_program(int64_t bytes);

// The flush of one benchmark: its buffer (and for a read, its kernel and the sums' buffer).
class L2Flusher {
 public:
  static absl::StatusOr<L2Flusher> create(runtime::Device& device, L2Flush flush);
  // Enqueues the flush before launch `launch` (a memset writes a new byte each launch).
  absl::Status run(runtime::Device& device, runtime::Stream& stream, int launch) const;
  L2Flush mode() const { return mode_; }

 private:
  L2Flush mode_ = L2Flush::kNone;
  runtime::DeviceBuffer buffer_, sums_;
  std::optional<runtime::Kernel> read_;
};

}  // namespace monotile::kernels::k3
