// Whether two processes sharing one NVIDIA GPU can run their kernels at once. Without NVIDIA's
// Multi-Process Service (MPS) the driver time-slices the processes' contexts: their kernels never
// run together, so two TP ranks' exchanges progress only as the slices alternate, and a
// two-process time measures the context switches, not the exchanges. With an MPS control daemon
// running (its pipe directory: CUDA_MPS_PIPE_DIRECTORY, else /tmp/nvidia-mps), the processes'
// work goes through one MPS server and runs concurrently, each grid on its own share of the SMs.
#pragma once

#include <string>

namespace monotile::runtime::decode {

struct MpsStatus {
  bool daemon = false;    // a control daemon's pipe was found
  std::string directory;  // the pipe directory looked in
  std::string why;        // where that came from, and what was found
};

// Looks for the control daemon's pipe (`control` in the pipe directory). A pipe left by a daemon
// that died would read as running; the times then show it (milliseconds a launch).
MpsStatus mps_status();

// The lines a benchmark prints about it: with the daemon one line saying the ranks may run at
// once; without it a line starting "WARNING:" that says the times are time-sliced, and how to
// start the daemon.
std::string mps_report(const MpsStatus& status);

}  // namespace monotile::runtime::decode
