// MpiGroup: all_gather is MPI_Allgather of each rank's byte count, then MPI_Allgatherv of the
// bytes. MPI's own state (initialized here or by the host, finalized by the last group made here)
// is process-wide, so it is counted under one mutex.
#include "runtime/decode/mpi_group.h"

#include <mpi.h>

#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace monotile::runtime::decode {
namespace {

// What this process did to MPI: whether a group started it, and how many groups are alive.
struct MpiState {
  std::mutex mutex;
  bool started_here = false;
  int groups = 0;
};

MpiState& mpi_state() {
  static MpiState state;
  return state;
}

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return absl::StrCat("MPI error ", code);
  return std::string(text, static_cast<size_t>(length));
}

class MpiGroup final : public Group {
 public:
  MpiGroup(MPI_Comm comm, int rank, int size, int local_rank, int local_size)
      : comm_(comm), rank_(rank), size_(size), local_rank_(local_rank), local_size_(local_size) {}
  ~MpiGroup() override {
    MPI_Comm_free(&comm_);
    MpiState& state = mpi_state();
    std::lock_guard lock(state.mutex);
    if (--state.groups == 0 && state.started_here) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  int local_size() const override { return local_size_; }

  absl::StatusOr<std::vector<std::string>> all_gather(std::string_view bytes) override {
    const int count = static_cast<int>(bytes.size());
    std::vector<int> counts(static_cast<size_t>(size_));
    if (int code = MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm_);
        code != MPI_SUCCESS) {
      return failed("MPI_Allgather", code);
    }
    std::vector<int> offsets(static_cast<size_t>(size_));
    int total = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      offsets[r] = total;
      total += counts[r];
    }
    // Allgatherv wants a non-null buffer even for no bytes.
    std::string gathered(static_cast<size_t>(total) + 1, '\0');
    if (int code = MPI_Allgatherv(bytes.data(), count, MPI_BYTE, gathered.data(), counts.data(),
                                  offsets.data(), MPI_BYTE, comm_);
        code != MPI_SUCCESS) {
      return failed("MPI_Allgatherv", code);
    }
    std::vector<std::string> out(static_cast<size_t>(size_));
    for (size_t r = 0; r < out.size(); ++r)
      out[r] = gathered.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(counts[r]));
    return out;
  }

 private:
  absl::Status failed(const char* call, int code) const {
    return absl::UnavailableError(absl::StrCat(call, " failed for the TP group over MPI (rank ",
                                               rank_, " of ", size_, "): ", mpi_error(code)));
  }

  MPI_Comm comm_;
  int rank_, size_;
  int local_rank_, local_size_;  // among the ranks sharing this node's memory (MPI's own split)
};

}  // namespace

absl::StatusOr<std::unique_ptr<Group>> make_mpi_group() {
  MpiState& state = mpi_state();
  std::lock_guard lock(state.mutex);
  int finalized = 0, initialized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    return absl::FailedPreconditionError(
        "MPI was finalized in this process and cannot start again; hint: keep one MPI group alive "
        "for as long as "
        "the process needs one");
  }
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
        code != MPI_SUCCESS) {
      return absl::UnavailableError(absl::StrCat("MPI_Init_thread failed: ", mpi_error(code)));
    }
    state.started_here = true;
    if (provided < MPI_THREAD_SERIALIZED) {
      // The host may call the group from any one thread at a time; MPI must allow that.
      MPI_Finalize();
      state.started_here = false;
      return absl::UnavailableError(absl::StrCat("MPI gives thread level ", provided,
                                                 ", expected at least MPI_THREAD_SERIALIZED (",
                                                 MPI_THREAD_SERIALIZED, ")"));
    }
  }
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 0;
  if (int code = MPI_Comm_dup(MPI_COMM_WORLD, &comm); code != MPI_SUCCESS) {
    if (state.groups == 0 && state.started_here) MPI_Finalize();
    return absl::UnavailableError(
        absl::StrCat("MPI_Comm_dup(MPI_COMM_WORLD) failed: ", mpi_error(code)));
  }
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // The ranks of this node: MPI's split by shared memory, ordered by world rank, so that local rank
  // r is the r-th of this node's ranks whatever order mpirun placed them in.
  MPI_Comm node = MPI_COMM_NULL;
  int local_rank = 0, local_size = 0;
  if (int code = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
      code != MPI_SUCCESS) {
    MPI_Comm_free(&comm);
    if (state.groups == 0 && state.started_here) MPI_Finalize();
    return absl::UnavailableError(absl::StrCat(
        "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed for rank ", rank, ": ", mpi_error(code)));
  }
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);
  ++state.groups;
  return std::make_unique<MpiGroup>(comm, rank, size, local_rank, local_size);
}

}  // namespace monotile::runtime::decode
