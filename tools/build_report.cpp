// Progress bar and build table. The bar is redrawn in place with \r on a terminal; in a pipe or a
// log each finished build is one line, so CI logs stay readable.
#include "tools/build_report.h"

#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "support/strings.h"

namespace monotile::tools {

jit::CompileAllResult compile_with_progress(jit::Jit& jit, std::span<const jit::Build> builds, int jobs,
                                            FILE* progress) {
  const bool terminal = ::isatty(::fileno(progress)) != 0;
  jit::CompileAllOptions options;
  options.jobs = jobs;
  options.on_progress = [&](const jit::CompileProgress& step) {
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
  return jit::compile_all(jit, builds, options);
}

void print_build_table(FILE* out, std::span<const jit::Build> builds, const jit::CompileAllResult& result) {
  std::fprintf(out, "%-14s %-24s %5s %5s %5s %11s %8s %8s %8s  %s\n", "build", "target", "regs", "agprs",
               "sgprs", "spills s/l", "smem B", "scratch", "time ms", "cache");
  for (size_t i = 0; i < builds.size(); ++i) {
    const absl::StatusOr<jit::CompiledBuild>& compiled = result.results[i];
    if (!compiled.ok()) {
      std::fprintf(out, "%-14s %-24s %5s %5s %5s %11s %8s %8s %8s  %s\n", builds[i].name.c_str(),
                   builds[i].target.str().c_str(), "-", "-", "-", "-", "-", "-", "-", "FAILED");
      continue;
    }
    const jit::ResourceReport& report = compiled->report;
    std::string spills = absl::StrCat(report.spill_stores, "/", report.spill_loads);
    std::fprintf(out, "%-14s %-24s %5d %5d %5d %11s %8lld %8lld %8.1f  %s\n", compiled->name.c_str(),
                 compiled->target.c_str(), report.registers, report.agprs, report.sgprs, spills.c_str(),
                 static_cast<long long>(report.shared_memory), static_cast<long long>(report.stack_frame),
                 compiled->seconds * 1e3, compiled->hit ? "hit" : "miss");
  }
  for (size_t i = 0; i < builds.size(); ++i) {
    if (result.results[i].ok()) continue;
    std::fprintf(out, "\nerror: %s\n", std::string(result.results[i].status().message()).c_str());
  }
  std::fprintf(out, "\n%zu builds (%zu unique): %zu hits, %zu misses, %zu failed in %.2f s\n", builds.size(),
               result.unique, result.hits, result.misses, result.failures, result.seconds);
}

}  // namespace monotile::tools
