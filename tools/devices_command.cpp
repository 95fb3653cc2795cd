// `monotile devices`: placeholder until the runtime's device discovery lands.
#include <cstdio>

#include "tools/commands.h"

namespace monotile::tools {

int devices_command(Args) {
  std::printf("device discovery is not built yet\n");
  return 1;
}

}  // namespace monotile::tools
