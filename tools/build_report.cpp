// Progress bar and build table. The bar is redrawn in place with \r on a terminal; in a pipe or a
// log each finished build is one line, so CI logs stay readable.
#include "tools/build_report.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "support/strings.h"

namespace monotile::tools {

std::function<void(const jit::CompileProgress&)> progress_printer(FILE* progress) {
  const bool terminal = ::isatty(::fileno(progress)) != 0;
  return [progress, terminal](const jit::CompileProgress& step) {
    std::string what = absl::StrFormat("%s %s %s %.2f s", step.build->name, step.build->target.str(),
                                       !step.status->ok() ? "FAILED" : step.hit ? "hit" : "miss", step.seconds);
    if (terminal) {
      constexpr int kWidth = 30;
      int filled = static_cast<int>(kWidth * step.done / std::max<size_t>(1, step.total));
      std::fprintf(progress, "\r[%s%s] %zu/%zu %-50s", std::string(filled, '#').c_str(),
                   std::string(kWidth - filled, '.').c_str(), step.done, step.total, what.c_str());
      if (step.done == step.total) std::fprintf(progress, "\n");
    } else {
      std::fprintf(progress, "[%zu/%zu] %s\n", step.done, step.total, what.c_str());
    }
    std::fflush(progress);
  };
}

jit::CompileAllResult compile_with_progress(jit::Jit& jit, std::span<const jit::Build> builds, int jobs,
                                            FILE* progress) {
  return jit::compile_all(jit, builds, {.jobs = jobs, .on_progress = progress_printer(progress)});
}

void print_build_errors(FILE* out, std::span<const jit::Build> builds, const jit::CompileAllResult& result) {
  // One error a cause: a target the compiler refuses fails every build the same way, so builds
  // whose messages differ only in their own name are listed together under one message.
  std::vector<std::pair<std::string, std::vector<std::string>>> causes;
  for (size_t i = 0; i < builds.size(); ++i) {
    if (result.results[i].ok()) continue;
    std::string message(result.results[i].status().message());
    const std::string prefix = absl::StrCat("build \"", builds[i].name, "\": ");
    if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
    auto same = std::find_if(causes.begin(), causes.end(), [&](const auto& cause) { return cause.first == message; });
    if (same == causes.end()) same = causes.insert(causes.end(), {message, {}});
    same->second.push_back(builds[i].name);
  }
  for (const auto& [message, names] : causes) {
    std::fprintf(out, "\nerror (%s %s): %s\n", names.size() == 1 ? "build" : "builds", absl::StrJoin(names, ", ").c_str(),
                 message.c_str());
  }
}

void print_build_table(FILE* out, std::span<const jit::Build> builds, const jit::CompileAllResult& result) {
  int width = 14;  // the name column fits the longest name
  for (const jit::Build& build : builds) width = std::max(width, static_cast<int>(build.name.size()));
  // "sgpr sp": AMD's scalar registers kept in VGPR lanes (no memory traffic; resource_report.h).
  std::fprintf(out, "%-*s %-24s %5s %5s %5s %11s %7s %8s %8s %8s  %s\n", width, "build", "target", "regs", "agprs",
               "sgprs", "spills s/l", "sgpr sp", "smem B", "scratch", "time ms", "cache");
  for (size_t i = 0; i < builds.size(); ++i) {
    const absl::StatusOr<jit::CompiledBuild>& compiled = result.results[i];
    if (!compiled.ok()) {
      std::fprintf(out, "%-*s %-24s %5s %5s %5s %11s %7s %8s %8s %8s  %s\n", width, builds[i].name.c_str(),
                   builds[i].target.str().c_str(), "-", "-", "-", "-", "-", "-", "-", "-", "FAILED");
      continue;
    }
    const jit::ResourceReport& report = compiled->report;
    std::string spills = absl::StrCat(report.spill_stores, "/", report.spill_loads);
    std::fprintf(out, "%-*s %-24s %5d %5d %5d %11s %7d %8lld %8lld %8.1f  %s\n", width, compiled->name.c_str(),
                 compiled->target.c_str(), report.registers, report.agprs, report.sgprs, spills.c_str(), report.sgpr_spills,
                 static_cast<long long>(report.shared_memory), static_cast<long long>(report.stack_frame),
                 compiled->seconds * 1e3, compiled->hit ? "hit" : "miss");
  }
  print_build_errors(out, builds, result);
  std::fprintf(out, "\n%zu builds (%zu unique): %zu hits, %zu misses, %zu failed in %.2f s\n", builds.size(),
               result.unique, result.hits, result.misses, result.failures, result.seconds);
}

}  // namespace monotile::tools
