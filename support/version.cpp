// The version string, set by the build from the CMake project's version.
#include "package/version.h"

namespace monotile {

const char* version() { return MONOTILE_VERSION; }

}  // namespace monotile
