// Whether an MPS control daemon serves this machine's GPUs; see mps_status.h.
#include "runtime/decode/mps_status.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace monotile::runtime::decode {

MpsStatus mps_status() {
  MpsStatus s;
  const char* set = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  s.directory = set != nullptr && *set != '\0' ? set : "/tmp/nvidia-mps";
  const std::filesystem::path control = std::filesystem::path(s.directory) / "control";
  std::error_code error;
  s.daemon = std::filesystem::exists(control, error);
  s.why = absl::StrCat(set != nullptr && *set != '\0' ? "CUDA_MPS_PIPE_DIRECTORY=" : "the default ",
                       set != nullptr && *set != '\0' ? "" : "pipe directory ", s.directory, ": ",
                       s.daemon ? "its control pipe is there" : "no control pipe");
  return s;
}

std::string mps_report(const MpsStatus& status) {
  if (status.daemon) {
    return absl::StrCat("MPS: a control daemon is running (", status.why,
                        "): the two processes' kernels run on the GPU at once, each grid on its "
                        "share of the SMs\n");
  }
  return absl::StrCat(
      "WARNING: no MPS control daemon (", status.why,
      "): two processes on one GPU are time-sliced by the driver, never concurrent, so the "
      "two-process times below include context switches and do NOT measure the exchanges; hint: "
      "start MPS (nvidia-cuda-mps-control -d) and run again\n");
}

}  // namespace monotile::runtime::decode
