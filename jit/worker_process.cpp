// The parent's side of the compile worker: spawn (posix_spawn: safe from many threads), collect the
// log with a deadline, reap, and turn the outcome into a Status. The worker runs in its own process
// group so a timeout kills everything it started.
#include "jit/worker_process.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "jit/wire.h"
#include "support/files.h"
#include "support/status_macros.h"
#include "support/strings.h"

extern char** environ;

namespace monotile::jit {
namespace {

constexpr std::string_view kWorkerName = "monotile-jit-worker";
constexpr size_t kMaxLogBytes = size_t{1} << 20;

// A private folder removed on every path out.
class TempDir {
 public:
  static absl::StatusOr<TempDir> make() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = absl::StrCat(base != nullptr && *base ? base : "/tmp", "/monotile-jit-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("cannot create a temporary folder ", pattern, ": ",
                                              std::strerror(errno), "; hint: check TMPDIR"));
    }
    TempDir dir;
    dir.path_ = pattern;
    return dir;
  }
  TempDir() = default;
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    std::error_code error;
    if (!path_.empty()) std::filesystem::remove_all(path_, error);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// The environment with TMPDIR pointing at the private folder, and the vendors' own caches off: the
// kernel cache already keeps every code object, so a second copy under ~/.cache/comgr would only
// grow, and where libcuda is present NVRTC's CUBIN step can be served from the driver's compute
// cache, which skips ptxas and with it the resource report every build needs.
std::vector<std::string> worker_environment(const std::filesystem::path& temp) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string_view text(*entry);
    if (text.starts_with("TMPDIR=") || text.starts_with("AMD_COMGR_CACHE=") ||
        text.starts_with("CUDA_CACHE_DISABLE=")) {
      continue;
    }
    env.emplace_back(text);
  }
  env.push_back(absl::StrCat("TMPDIR=", temp.string()));
  env.push_back("AMD_COMGR_CACHE=0");
  env.push_back("CUDA_CACHE_DISABLE=1");
  return env;
}

std::string signal_text(int signal) {
  const char* name = sigabbrev_np(signal);
  const char* description = strsignal(signal);
  return absl::StrCat(signal, " (SIG", name != nullptr ? name : "?", ": ",
                      description != nullptr ? description : "unknown", ")");
}

std::string with_log(std::string message, const std::string& log) {
  if (log.empty()) return absl::StrCat(message, "; the worker wrote no log");
  return absl::StrCat(message, "; its log:\n", log);
}

}  // namespace

// The file this code was loaded from: libmonotile.so when the package is linked, else the program.
std::filesystem::path this_object() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&find_worker_executable), &info) == 0 || info.dli_fname == nullptr) return {};
  std::error_code error;
  std::filesystem::path path = std::filesystem::canonical(info.dli_fname, error);
  return error ? std::filesystem::path(info.dli_fname) : path;
}

absl::StatusOr<std::filesystem::path> find_worker_executable() {
  std::vector<std::filesystem::path> candidates;
  if (const char* env = std::getenv("MONOTILE_JIT_WORKER"); env != nullptr && *env) {
    candidates.emplace_back(env);
  } else if (const std::filesystem::path object = this_object(); !object.empty()) {
    const std::filesystem::path dir = object.parent_path();
    candidates.push_back(dir / kWorkerName);
    // An installed library or tool: the worker sits in the prefix's libexec folder.
    candidates.push_back((dir / MONOTILE_WORKER_FROM_LIBDIR / kWorkerName).lexically_normal());
    candidates.push_back((dir / MONOTILE_WORKER_FROM_BINDIR / kWorkerName).lexically_normal());
    // A program in a build tree: the tree's root holds CMakeCache.txt and the worker is in jit/.
    for (std::filesystem::path up = dir; up.has_relative_path(); up = up.parent_path()) {
      if (std::filesystem::exists(up / "CMakeCache.txt")) {
        candidates.push_back(up / "jit" / kWorkerName);
        break;
      }
    }
  }
  std::string looked;
  for (const std::filesystem::path& candidate : candidates) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    absl::StrAppend(&looked, looked.empty() ? "" : ", ", candidate.string());
  }
  return absl::NotFoundError(absl::StrCat(
      "the compile worker \"", to_absl(kWorkerName), "\" was not found (looked at: ", looked,
      "); hint: build the monotile_jit_worker target, or set MONOTILE_JIT_WORKER to its path"));
}

absl::StatusOr<CompileResult> compile_in_worker(const CompileRequest& request, double timeout_seconds) {
  MT_ASSIGN_OR_RETURN(std::filesystem::path worker, find_worker_executable());
  MT_ASSIGN_OR_RETURN(TempDir temp, TempDir::make());
  const std::filesystem::path request_path = temp.path() / "request";
  const std::filesystem::path result_path = temp.path() / "result";
  MT_RETURN_IF_ERROR(write_file(request_path, encode_request(request)));

  int log_pipe[2];
  if (::pipe2(log_pipe, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("pipe2 failed: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, log_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, log_pipe[1], 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t signals;
  sigemptyset(&signals);
  posix_spawnattr_setsigmask(&attributes, &signals);
  sigaddset(&signals, SIGPIPE);
  posix_spawnattr_setsigdefault(&attributes, &signals);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> args = {worker.string(), request_path.string(), result_path.string()};
  std::vector<std::string> env = worker_environment(temp.path());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);

  pid_t pid = 0;
  int spawned = posix_spawn(&pid, worker.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(log_pipe[1]);
  if (spawned != 0) {
    ::close(log_pipe[0]);
    return absl::InternalError(absl::StrCat("cannot start ", worker.string(), ": ", std::strerror(spawned)));
  }

  // Read the log until the worker closes it or the deadline passes.
  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_seconds));
  std::string log;
  bool timed_out = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd entry{log_pipe[0], POLLIN, 0};
    int ready = ::poll(&entry, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buffer[4096];
    ssize_t got = ::read(log_pipe[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    if (log.size() < kMaxLogBytes) log.append(buffer, static_cast<size_t>(got));
  }
  ::close(log_pipe[0]);
  if (timed_out) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
  }
  int wait_status = 0;
  while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    return absl::DeadlineExceededError(with_log(
        absl::StrFormat("the compile did not finish within %.1f s and was killed (hint: raise "
                        "MONOTILE_JIT_TIMEOUT if the kernel is just large)", timeout_seconds),
        log));
  }
  if (WIFSIGNALED(wait_status)) {
    return absl::AbortedError(
        with_log(absl::StrCat("the compiler crashed: its worker process died of signal ",
                              signal_text(WTERMSIG(wait_status))),
                 log));
  }
  if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
    return absl::InternalError(
        with_log(absl::StrCat("the compile worker exited with status ", WEXITSTATUS(wait_status)), log));
  }
  MT_ASSIGN_OR_RETURN(std::string bytes, read_file(result_path));
  absl::StatusOr<CompileResult> result = decode_result(bytes);
  if (result.ok() && !log.empty()) result->log = absl::StrCat(result->log, result->log.empty() ? "" : "\n", log);
  return result;
}

}  // namespace monotile::jit
