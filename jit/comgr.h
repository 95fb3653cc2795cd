// AMD's code-object manager (comgr), loaded with dlopen: reads a code object's kernel metadata into
// a ResourceReport and disassembles it to ISA. It never compiles, so it is safe in any process.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "jit/resource_report.h"

namespace monotile::jit {

struct ComgrVersion {
  int major = 0;
  int minor = 0;
  std::string library_path;  // the file the library was loaded from
};

// The installed comgr's version (amd_comgr_get_version), or why it cannot be loaded.
absl::StatusOr<ComgrVersion> comgr_version();

// The resources of kernel `kernel_name` from the code object's amdhsa.kernels metadata.
absl::StatusOr<ResourceReport> read_amd_resources(std::string_view code_object,
                                                  std::string_view kernel_name);

// The code object's ISA as text, for `target` such as "gfx90a" or "gfx90a:sramecc+:xnack-".
absl::StatusOr<std::string> disassemble_amd(std::string_view code_object, std::string_view target);

}  // namespace monotile::jit
