// The compiler interface: one CompileRequest (source, entry, target, options, in-memory headers)
// in, a code object with its resource report out. make_compiler() picks NVRTC or hiprtc+comgr by
// the target's vendor, refuses targets the installed compiler cannot build, and by default runs
// every compile in an isolated worker process so that a compiler crash or hang is a Status.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dsl/target.h"
#include "jit/resource_report.h"

namespace monotile::jit {

// A header the source #includes by `name`, handed to the compiler in memory: generated code never
// reads the system's include paths.
struct Header {
  std::string name;
  std::string content;
  friend bool operator==(const Header&, const Header&) = default;
};

// Every member has a default, so designated initializers may name only what they set.
struct CompileRequest {
  std::string kernel_name = {};      // the extern "C" __global__ function
  std::string source = {};           // complete HIP/CUDA C++; needs no system headers
  dsl::Target target = dsl::Target::cpu();
  std::vector<std::string> options = {};  // extra compiler flags, after the compiler's own
  std::vector<Header> headers = {};       // in-memory headers, by include name
  std::string build_name = {};       // the build's name, for messages (kernel_name when empty)
  std::string build_key = {};        // the build's cache key in hex, for messages (may be empty)
  bool want_assembly = false;        // fill CompileResult::assembly (PTX on NVIDIA, ISA on AMD)
  double test_sleep_seconds = 0;     // test-only: the worker sleeps this long before compiling
};

struct CompileResult {
  std::string code_object;     // CUBIN (NVIDIA) or HSA code object (AMD), loadable by the driver
  std::string log;
  ResourceReport report;
  std::string assembly;        // only when requested
};

class Compiler {
 public:
  virtual ~Compiler() = default;
  // e.g. "nvrtc 13.0" or "hiprtc 5.2.21153 + comgr 2.4"; part of every cache key
  virtual std::string identity() const = 0;
  // identity() plus what distinguishes two installs of the same version (library file sizes and
  // times, the AMD device-library bitcode files): the cache key hashes this.
  virtual std::string key_identity() const { return identity(); }
  // The compiler's short name for messages: "nvrtc" or "hiprtc".
  virtual std::string name() const = 0;
  virtual absl::StatusOr<CompileResult> compile(const CompileRequest& request) = 0;

  // The files this compiler is made of (its libraries, the device libraries it links): an identity
  // remembered in the cache is trusted only while none of them changed.
  virtual std::vector<std::string> files() const { return {}; }
  // Whether the compiler can build its target, as far as it can tell without compiling: ok, or
  // FailedPrecondition saying what is needed.
  virtual absl::Status check_target() const { return absl::OkStatus(); }
  // True when check_target's refusal may be wrong and only a compile can tell (an older hiprtc
  // aborts on an architecture it does not know, and builds of one version differ): then
  // check_compiler_target probes before refusing.
  virtual bool target_needs_probe() const { return false; }
};

// The file name the compiler is given for a request's source (diagnostics point at it):
// "<kernel>.cu" for NVIDIA, "<kernel>.hip" for AMD.
inline std::string source_file_name(const dsl::Target& target, const std::string& kernel_name) {
  return kernel_name + (target.vendor() == dsl::Vendor::kNvidia ? ".cu" : ".hip");
}

enum class Isolation {
  kWorkerProcess,  // each compile in a fresh monotile-jit-worker process (default)
  kInProcess,      // in this process: faster to start, but a compiler abort takes the process down
};

struct CompilerOptions {
  Isolation isolation = Isolation::kWorkerProcess;
  // A worker still running after this long is killed and the compile fails.
  double timeout_seconds = 300;
  // MONOTILE_JIT_TIMEOUT (seconds) and MONOTILE_JIT_ISOLATION ("process" or "in-process") override
  // the defaults; a malformed value is warned about once and ignored.
  static CompilerOptions from_environment();
};

// NVRTC for NVIDIA targets, hiprtc+comgr for AMD; a clear error if the library is missing or the
// installed compiler cannot build this target. Compile errors name the build and the target:
// `hiprtc could not compile build <key> "name" for gfx90a: <reason and log>`.
absl::StatusOr<std::unique_ptr<Compiler>> make_compiler(const dsl::Target& target);
absl::StatusOr<std::unique_ptr<Compiler>> make_compiler(const dsl::Target& target,
                                                        const CompilerOptions& options);

// make_compiler without the target check: the library is loaded (or a missing one refused), and
// check_compiler_target tells whether it builds the target. The JIT keeps the two apart so that it
// can remember each answer in the cache.
absl::StatusOr<std::unique_ptr<Compiler>> make_unchecked_compiler(const dsl::Target& target,
                                                                  const CompilerOptions& options);

// Whether `compiler` builds its target: Compiler::check_target(); where that refuses but only a
// compile can tell, and compiles are isolated, a probe compile of an empty kernel in the worker
// decides (a crash there is an answer, not a crash here). A refusal names the target, the
// compiler's version, what is needed, and the probe's failure.
absl::Status check_compiler_target(Compiler& compiler, const dsl::Target& target, const CompilerOptions& options);

}  // namespace monotile::jit
