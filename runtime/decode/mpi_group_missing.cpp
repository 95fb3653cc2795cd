// make_mpi_group in a build configured without MPI: it says so, with the fix.
#include "absl/status/status.h"
#include "runtime/decode/mpi_group.h"

namespace monotile::runtime::decode {

absl::StatusOr<std::unique_ptr<Group>> make_mpi_group() {
  return absl::UnavailableError(
      "this build of monotile has no MPI: the TP group over MPI is left out; hint: "
      "scripts/install-deps.sh installs "
      "libopenmpi-dev, then configure and build again");
}

}  // namespace monotile::runtime::decode
