// Formatting of driver-call failures; see driver_error.h.
#include "runtime/driver_error.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "support/strings.h"

namespace monotile::runtime {

absl::Status driver_call_failed(absl::StatusCode code, std::string_view call,
                                std::string_view subject, std::string_view error_name) {
  if (subject.empty()) {
    return absl::Status(code, absl::StrCat(to_absl(call), " failed: ", to_absl(error_name)));
  }
  return absl::Status(code, absl::StrCat(to_absl(call), " failed for ", to_absl(subject), ": ",
                                         to_absl(error_name)));
}

std::string describe_bytes(uint64_t bytes) {
  constexpr uint64_t kKiB = 1024;
  if (bytes < kKiB) return absl::StrCat(bytes, " bytes");
  const char* unit = "KiB";
  double value = static_cast<double>(bytes) / kKiB;
  if (bytes >= kKiB * kKiB * kKiB) {
    unit = "GiB";
    value = static_cast<double>(bytes) / (kKiB * kKiB * kKiB);
  } else if (bytes >= kKiB * kKiB) {
    unit = "MiB";
    value = static_cast<double>(bytes) / (kKiB * kKiB);
  }
  return absl::StrFormat("%.2f %s (%d bytes)", value, unit, bytes);
}

}  // namespace monotile::runtime
