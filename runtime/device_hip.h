// The HIP device: an AMD GPU through the HIP runtime (libamdhip64, dlopen'ed; see driver_hip.h).
// Every call selects the device first (hipSetDevice) so one thread can drive several GPUs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/device.h"
#include "runtime/discovery.h"
#include "runtime/driver_hip.h"

namespace monotile::runtime {

// Every AMD GPU the runtime reports. An error says why there is none: `no AMD HIP runtime:
// dlopen(...) failed: ...`, `AMD HIP runtime libamdhip64.so.5 (HIP 5.2.21153) is present but
// hipInit failed: hipErrorInvalidDevice (no AMD GPU, or no access to /dev/kfd)`, ...
absl::StatusOr<BackendDevices> open_hip_devices(
    const std::vector<std::string>& library_names = default_hip_library_names());

// The gcnArchName found at `layout.gcn_arch_name` in a filled hipDeviceProp_t buffer, checked to
// look like one ("gfx942:sramecc+:xnack-"); an error naming the layout otherwise.
absl::StatusOr<std::string> gcn_arch_name(const unsigned char* properties,
                                          const hip_api::DevicePropLayout& layout);

}  // namespace monotile::runtime
