// Device discovery: every GPU the installed drivers can reach, the CPU interpreter's device, and
// for each GPU backend that has no device, why (no library, no GPU behind the driver, init failed).
// Never fails and never crashes on a machine without a GPU.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dsl/target.h"
#include "runtime/cpu_module.h"
#include "runtime/device.h"
#include "runtime/interpreter_module.h"

namespace monotile::runtime {

// The devices of one backend, and why any device it reported was left out.
struct BackendDevices {
  std::vector<std::unique_ptr<Device>> devices;
  std::vector<std::string> skipped;  // "NVIDIA device 1 left out: <reason>"
};

// A GPU backend with no usable device.
struct MissingBackend {
  dsl::Vendor vendor = dsl::Vendor::kNvidia;
  std::string reason;  // "no NVIDIA driver: dlopen(\"libcuda.so.1\") failed: ..."
};

struct Discovery {
  // NVIDIA GPUs in driver order, then AMD GPUs, then the CPU device (when included).
  std::vector<std::unique_ptr<Device>> devices;
  std::vector<MissingBackend> missing;
  // Devices a driver reported but monotile left out, with the reason.
  std::vector<std::string> skipped;
};

struct DiscoveryOptions {
  std::vector<std::string> cuda_libraries = {"libcuda.so.1"};
  std::vector<std::string> hip_libraries = {"libamdhip64.so.6", "libamdhip64.so.5",
                                            "libamdhip64.so"};
  bool include_cpu = true;
  // Handed to the CPU device (see make_cpu_device): by default the interpreter, loading programs
  // from the process's ProgramCatalog.
  CpuModuleLoader cpu_loader = interpreter_loader(ProgramCatalog::process());
};

Discovery discover_devices(const DiscoveryOptions& options = {});

// Why `found` holds no GPU, for a message or a test's skip: "no GPU: " and the reasons of every
// missing backend and every device left out.
std::string no_gpu_reason(const Discovery& found);

// The first device of `found` that is not the CPU, moved out of it; null without one (then
// no_gpu_reason(found) says why).
std::unique_ptr<Device> take_first_gpu(Discovery& found);

}  // namespace monotile::runtime
