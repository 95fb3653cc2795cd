// The version string, set by the build from the CMake project's version.
#include "support/version.h"

namespace monotile {

const char* version() { return MONOTILE_VERSION; }

}  // namespace monotile
