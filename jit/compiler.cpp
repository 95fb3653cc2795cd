// make_compiler: the vendor backend behind a wrapper that isolates each compile in a worker process
// (by default) and names the build and target in every error.
#include "jit/compiler.h"

#include <algorithm>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "jit/backend.h"
#include "jit/worker_process.h"
#include "support/log.h"
#include "support/strings.h"

namespace monotile::jit {
namespace {

class CheckedCompiler final : public Compiler {
 public:
  CheckedCompiler(std::unique_ptr<Compiler> backend, CompilerOptions options)
      : backend_(std::move(backend)), options_(options) {}

  std::string identity() const override { return backend_->identity(); }
  std::string key_identity() const override { return backend_->key_identity(); }
  std::string name() const override { return backend_->name(); }
  std::vector<std::string> files() const override { return backend_->files(); }
  absl::Status check_target() const override { return backend_->check_target(); }
  bool target_needs_probe() const override { return backend_->target_needs_probe(); }

  absl::StatusOr<CompileResult> compile(const CompileRequest& request) override {
    absl::StatusOr<CompileResult> result = options_.isolation == Isolation::kWorkerProcess
                                               ? compile_in_worker(request, options_.timeout_seconds)
                                               : backend_->compile(request);
    if (result.ok()) return result;
    const std::string& label = request.build_name.empty() ? request.kernel_name : request.build_name;
    return absl::Status(result.status().code(),
                        absl::StrCat(backend_->name(), " could not compile ", to_absl(label_prefix(request)),
                                     "\"", label, "\" for ", request.target.str(), ": ",
                                     result.status().message()));
  }

 private:
  static std::string label_prefix(const CompileRequest& request) {
    return request.build_key.empty() ? "" : absl::StrCat("build ", request.build_key, " ");
  }

  std::unique_ptr<Compiler> backend_;
  CompilerOptions options_;
};

}  // namespace

CompilerOptions CompilerOptions::from_environment() {
  CompilerOptions options;
  if (const char* timeout = std::getenv("MONOTILE_JIT_TIMEOUT"); timeout != nullptr && *timeout) {
    char* end = nullptr;
    double seconds = std::strtod(timeout, &end);
    if (end != timeout && *end == '\0' && seconds > 0) {
      options.timeout_seconds = seconds;
    } else {
      log_warning_once("MONOTILE_JIT_TIMEOUT", absl::StrCat("MONOTILE_JIT_TIMEOUT=\"", timeout,
                                                             "\" is not a positive number of seconds; using ",
                                                             options.timeout_seconds));
    }
  }
  if (const char* isolation = std::getenv("MONOTILE_JIT_ISOLATION"); isolation != nullptr && *isolation) {
    std::string_view value(isolation);
    if (value == "in-process") {
      options.isolation = Isolation::kInProcess;
    } else if (value != "process") {
      log_warning_once("MONOTILE_JIT_ISOLATION",
                       absl::StrCat("MONOTILE_JIT_ISOLATION=\"", isolation,
                                    "\" is neither \"process\" nor \"in-process\"; using \"process\""));
    }
  }
  return options;
}

absl::StatusOr<std::unique_ptr<Compiler>> make_compiler(const dsl::Target& target) {
  return make_compiler(target, CompilerOptions::from_environment());
}

absl::StatusOr<std::unique_ptr<Compiler>> make_unchecked_compiler(const dsl::Target& target,
                                                                  const CompilerOptions& options) {
  absl::StatusOr<std::unique_ptr<Compiler>> backend = make_backend_compiler(target);
  if (!backend.ok()) return backend.status();
  return std::unique_ptr<Compiler>(new CheckedCompiler(std::move(*backend), options));
}

absl::Status check_compiler_target(Compiler& compiler, const dsl::Target& target, const CompilerOptions& options) {
  // Probe only where the version rule doubts: builds of one version differ (HIP 5.7's hiprtc builds
  // gfx942 although ROCm 6.0 first listed it), and a probe costs a compile.
  const absl::Status known = compiler.check_target();
  if (known.ok() || !compiler.target_needs_probe() || options.isolation != Isolation::kWorkerProcess) return known;
  // The probe: an empty kernel. Only the worker runs it, so an abort is a failed compile.
  CompileRequest probe{.kernel_name = "monotile_probe",
                       .source = "extern \"C\" __global__ void monotile_probe() {}\n",
                       .target = target,
                       .build_name = "target probe"};
  absl::StatusOr<CompileResult> result = compiler.compile(probe);
  if (result.ok()) return absl::OkStatus();
  absl::string_view reason = result.status().message();
  reason = reason.substr(0, std::min(reason.find('\n'), reason.find("; its log")));  // the first line says it
  return absl::FailedPreconditionError(absl::StrCat(known.message(), " (a probe compile failed: ", reason, ")"));
}

absl::StatusOr<std::unique_ptr<Compiler>> make_compiler(const dsl::Target& target, const CompilerOptions& options) {
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = make_unchecked_compiler(target, options);
  if (!compiler.ok()) return compiler.status();
  if (absl::Status supported = check_compiler_target(**compiler, target, options); !supported.ok()) return supported;
  return compiler;
}

}  // namespace monotile::jit
