// `monotile compile FILE.cpp|NAME`: a researcher's kernel file (dsl/kernel_file.h), or a registered
// kernel, lowered and compiled through the JIT and the kernel cache for each target, with what each
// build cost: cache hit or compiled, and with --report the resource report. A second run is all
// cache hits. Exits 0 when every build compiled, 1 when any failed, 2 on misuse.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "jit/jit.h"
#include "jit/program_build.h"
#include "kernels/registry.h"
#include "support/strings.h"
#include "tools/build_report.h"
#include "tools/command_flags.h"
#include "tools/commands.h"
#include "tools/kernel_file.h"
#include "tools/shared_flags.h"

ABSL_FLAG(bool, print_source, false, "print each build's generated CUDA/HIP source");
ABSL_FLAG(bool, report, false, "print each build's resources");
ABSL_FLAG(bool, list, false, "print the registered kernels");

namespace monotile::tools {
namespace {

constexpr const char* kUsage =
    "usage: monotile compile FILE.cpp|NAME [--target sm_90a,gfx90a,gfx942] [--print-source]\n"
    "                        [--report] [--cache-dir DIR] [--jobs N]\n"
    "       monotile compile --list\n"
    "  FILE.cpp        a kernel file: DSL kernels named with MONOTILE_KERNEL\n"
    "                  (docs/tutorial/researcher/README.md), built with $CXX or g++ and $CXXFLAGS\n"
    "                  against the installed package (this tool's, or MONOTILE_PACKAGE_DIR)\n"
    "  NAME            a registered kernel (--list prints them)\n"
    "  --target        comma-separated targets (default sm_90a,gfx90a)\n"
    "  --print-source  print each build's generated CUDA/HIP source\n"
    "  --report        print each build's resources: registers, spills, shared memory, scratch\n"
    "  --cache-dir     the writable cache folder (default MONOTILE_CACHE_DIR or ~/.cache/monotile)\n"
    "  --jobs          parallel compiles (default: one per core)\n";

int misuse(const std::string& message) {
  std::fprintf(stderr, "monotile compile: %s\n%s", message.c_str(), kUsage);
  return 2;
}

int list_registry() {
  for (const kernels::RegistryEntry& entry : kernels::registry()) {
    std::printf("%-40s %s\n", entry.name.c_str(), entry.description.c_str());
  }
  return 0;
}

// A kernel to compile: its programs per target, with the build options that go with them.
struct Source {
  std::string label;
  std::function<absl::StatusOr<jit::ProgramBuild>(const dsl::Target&)> build;
};

// A path names a file; anything else a registered kernel.
bool names_a_file(const std::string& what) {
  const std::string extension = std::filesystem::path(what).extension().string();
  return what.find('/') != std::string::npos || extension == ".cpp" || extension == ".cc" ||
         extension == ".cxx";
}

}  // namespace

int compile_command(Args args) {
  const ParsedArgs parsed = parse_command_flags({.command = "monotile compile",
                                                 .file = __FILE__,
                                                 .shared = {"target", "cache_dir", "jobs"},
                                                 .usage = kUsage},
                                                args);
  if (parsed.exit_status) return *parsed.exit_status;
  if (absl::GetFlag(FLAGS_list)) return list_registry();
  if (parsed.positional.size() > 1) {
    return misuse(absl::StrCat("one kernel file or name expected, got \"", parsed.positional[0],
                               "\" and \"", parsed.positional[1], "\""));
  }
  if (parsed.positional.empty()) return misuse("no kernel file or name");
  const std::string what = parsed.positional[0];
  const std::string targets_text = absl::GetFlag(FLAGS_target).value_or("sm_90a,gfx90a");
  const std::string cache_dir = absl::GetFlag(FLAGS_cache_dir);
  const bool print_source = absl::GetFlag(FLAGS_print_source), report = absl::GetFlag(FLAGS_report);
  const int jobs = absl::GetFlag(FLAGS_jobs).value_or(0);
  if (absl::GetFlag(FLAGS_jobs) && jobs < 1) {
    return misuse(absl::StrCat("--jobs takes a positive integer, got \"", jobs, "\""));
  }

  std::vector<dsl::Target> targets;
  for (absl::string_view text : absl::StrSplit(targets_text, ',', absl::SkipEmpty())) {
    absl::StatusOr<dsl::Target> target = dsl::Target::parse(to_std(text));
    if (!target.ok()) return misuse(std::string(target.status().message()));
    if (target->vendor() == dsl::Vendor::kCpu) {
      return misuse(
          "target \"cpu\" has no compiled kernels: it runs on the interpreter; hint: name GPU "
          "targets "
          "such as sm_90a or gfx90a");
    }
    targets.push_back(*target);
  }
  if (targets.empty()) return misuse("--target lists no target");

  std::vector<Source> sources;
  if (names_a_file(what)) {
    absl::StatusOr<Package> package = find_package();
    if (!package.ok()) {
      std::fprintf(stderr, "monotile compile: %s\n",
                   std::string(package.status().message()).c_str());
      return 1;
    }
    std::fprintf(stderr, "building %s against the package in %s\n", what.c_str(),
                 package->include_dir.parent_path().string().c_str());
    absl::StatusOr<std::vector<FileKernel>> kernels = load_kernel_file(what, *package);
    if (!kernels.ok()) {
      std::fprintf(stderr, "monotile compile: %s\n",
                   std::string(kernels.status().message()).c_str());
      return absl::IsNotFound(kernels.status()) ? 2 : 1;
    }
    for (const FileKernel& kernel : *kernels) {
      sources.push_back({kernel.expression,
                         [kernel](const dsl::Target& target) -> absl::StatusOr<jit::ProgramBuild> {
                           absl::StatusOr<dsl::Program> program = build_file_kernel(kernel, target);
                           if (!program.ok()) return program.status();
                           return jit::make_build(*program, target);
                         }});
    }
  } else {
    absl::StatusOr<const kernels::RegistryEntry*> entry = kernels::find_kernel(what);
    if (!entry.ok()) return misuse(std::string(entry.status().message()));
    sources.push_back({what, [entry = *entry](const dsl::Target& target) {
                         return kernels::registry_build(*entry, target);
                       }});
  }

  // Lower every kernel for every target (milliseconds), then compile them all at once. A mistake
  // in a kernel fails it for every target alike: its message is printed once, naming the targets.
  std::vector<jit::Build> builds;
  std::vector<std::pair<std::string, std::vector<std::string>>>
      refusals;  // message with "{target}"
  int failed = 0;
  for (const Source& source : sources) {
    for (const dsl::Target& target : targets) {
      absl::StatusOr<jit::ProgramBuild> made = source.build(target);
      if (!made.ok()) {
        const std::string message = absl::StrReplaceAll(
            made.status().message(), {{absl::StrCat(" ", target.str(), ":"), " {target}:"}});
        auto same = std::find_if(refusals.begin(), refusals.end(),
                                 [&](const auto& r) { return r.first == message; });
        if (same == refusals.end()) same = refusals.insert(refusals.end(), {message, {}});
        same->second.push_back(target.str());
        ++failed;
        continue;
      }
      if (print_source) {
        std::printf("// ---- %s for %s: %s\n%s\n", made->build.name.c_str(), target.str().c_str(),
                    made->build.kernel_name.c_str(), made->build.source.c_str());
      }
      builds.push_back(std::move(made->build));
    }
  }
  for (const auto& [message, names] : refusals) {
    std::fprintf(stderr, "monotile compile: %s\n",
                 absl::StrReplaceAll(message, {{"{target}", absl::StrJoin(names, ", ")}}).c_str());
  }
  jit::JitConfig config = jit::JitConfig::from_environment();
  if (!cache_dir.empty()) config.cache.writable_dir = cache_dir;
  jit::Jit jit(config);
  std::fflush(stdout);
  jit::CompileAllResult result = compile_with_progress(jit, builds, jobs, stderr);
  if (report) {
    print_build_table(stdout, builds, result);
  } else {
    for (size_t i = 0; i < builds.size(); ++i) {
      const absl::StatusOr<jit::CompiledBuild>& compiled = result.results[i];
      const std::string state =
          !compiled.ok()  ? std::string("FAILED")
          : compiled->hit ? absl::StrFormat("cache hit in %.1f ms: %s", compiled->seconds * 1e3,
                                            compiled->report.summary())
                          : absl::StrFormat("compiled in %.2f s: %s", compiled->seconds,
                                            compiled->report.summary());
      std::printf("%s %s: %s\n", builds[i].name.c_str(), builds[i].target.str().c_str(),
                  state.c_str());
    }
    print_build_errors(stdout, builds, result);
    std::printf("\n%zu builds: %zu cache hits, %zu compiled, %zu failed\n", builds.size() + failed,
                result.hits, result.misses, result.failures + failed);
  }
  return result.ok() && failed == 0 ? 0 : 1;
}

}  // namespace monotile::tools
