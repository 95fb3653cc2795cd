// Runs one compile in a fresh monotile-jit-worker process: the request goes in a file in a private
// temporary folder (also the worker's TMPDIR, so the comgr-* folders hiprtc leaves behind are removed
// with it), the worker's stdout and stderr come back through a pipe as the log, and a worker that
// crashes, aborts or outlives the timeout becomes an error carrying that log.
#pragma once

#include <filesystem>

#include "absl/status/statusor.h"
#include "jit/compiler.h"

namespace monotile::jit {

// Errors: DeadlineExceeded on timeout, Aborted when the worker died of a signal, Internal when it
// exited abnormally; the message says which, and ends with the worker's stderr when it wrote any.
// A compile error inside the worker comes back as the compiler's own Status.
absl::StatusOr<CompileResult> compile_in_worker(const CompileRequest& request, double timeout_seconds);

// The worker executable: $MONOTILE_JIT_WORKER, else found relative to the file this code was loaded
// from (libmonotile.so, or the program that linked it statically): next to it, in the install
// prefix's libexec/monotile, or in the jit/ folder of the build tree it sits in.
absl::StatusOr<std::filesystem::path> find_worker_executable();

}  // namespace monotile::jit
