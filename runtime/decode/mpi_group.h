// The TP group over MPI: one rank a process (`mpirun -np N monotile decode --mpi ...`), every rank
// of MPI_COMM_WORLD in world-rank order. Handles and votes travel through it as vLLM passes them
// through its CPU group. The in-process group (in_process_group.h) stays for tests.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "runtime/decode/group.h"

namespace monotile::runtime::decode {

// The group of MPI_COMM_WORLD's ranks, on a duplicate of it whose errors come back as Statuses
// (MPI_ERRORS_RETURN) instead of aborting. The first group a process makes initializes MPI (thread
// level MPI_THREAD_SERIALIZED: one thread at a time calls into the group) unless the host already
// has; the last one destroyed then finalizes it. MPI cannot start again once finalized, so a
// process that needs a group after that is refused (FailedPrecondition), as is an MPI that cannot
// start (Unavailable, with MPI's error). Its local_rank and local_size are this node's ranks, as
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) finds them, in world-rank order.
absl::StatusOr<std::unique_ptr<Group>> make_mpi_group();

}  // namespace monotile::runtime::decode
