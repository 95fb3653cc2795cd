// A stand-in kernel's launch grid (program instances along x, y, z), for the launches' own Dim3.
#pragma once

namespace monotile::kernels::standins {

struct Grid {
  int x = 1, y = 1, z = 1;
};

}  // namespace monotile::kernels::standins
