// How a failed driver call becomes an absl::Status: the call, what it was asked to do, and the
// driver's own error name, e.g. for a launch:
//   <launch entry point> failed for "vector_add" (grid 132x1x1, block 256x1x1, smem 0): <error name>
// Vendor-neutral: each backend maps its error codes to a StatusCode and a name, then calls this.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace monotile::runtime {

// "<call> failed for <subject>: <error_name>", or "<call> failed: <error_name>" when `subject` is
// empty. `code` says what kind of failure it is (out of memory, invalid argument, ...).
absl::Status driver_call_failed(absl::StatusCode code, std::string_view call,
                                std::string_view subject, std::string_view error_name);

// "256 bytes", "48.0 KiB (49152 bytes)", "1.50 GiB (1610612736 bytes)": sizes in messages.
std::string describe_bytes(uint64_t bytes);

}  // namespace monotile::runtime
