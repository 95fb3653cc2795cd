// Resource policy: each rule is one comparison; every violation found is listed in one message.
#include "jit/resource_policy.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace monotile::jit {

absl::Status check_resources(const Build& build, const ResourceReport& report) {
  std::vector<std::string> problems;
  std::vector<std::string> hints;
  if (!build.policy.allow_spills && (report.spill_stores > 0 || report.spill_loads > 0)) {
    problems.push_back(absl::StrCat("it spills registers (", report.spill_stores, " spill stores, ",
                                    report.spill_loads, " spill loads)"));
    hints.push_back("policy.allow_spills");
  }
  if (!build.policy.allow_scratch && report.stack_frame > 0) {
    problems.push_back(absl::StrCat("it uses ", report.stack_frame,
                                    " bytes of scratch (local memory) per thread"));
    hints.push_back("policy.allow_scratch");
  }
  int64_t shared = report.shared_memory + build.launch.dynamic_shared_memory;
  if (!build.policy.allow_shared_overflow && shared > build.target.shared_memory_per_block()) {
    problems.push_back(absl::StrCat("it needs ", shared, " bytes of shared memory (", report.shared_memory,
                                    " static + ", build.launch.dynamic_shared_memory, " dynamic), more than the ",
                                    build.target.shared_memory_per_block(), " a block has on ", build.target.arch()));
    hints.push_back("policy.allow_shared_overflow");
  }
  if (report.max_threads_per_block > 0 && build.launch.threads() > report.max_threads_per_block) {
    problems.push_back(absl::StrCat("its launch block has ", build.launch.threads(),
                                    " threads, more than the kernel's limit of ", report.max_threads_per_block));
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "build \"", build.name, "\" for ", build.target.str(), " fails the resource policy: ",
      absl::StrJoin(problems, "; "), " [", report.summary(),
      "]; hint: shrink its tiles or raise its block count",
      hints.empty() ? "" : absl::StrCat(", or opt out with ", absl::StrJoin(hints, " / "), " on this build")));
}

}  // namespace monotile::jit
