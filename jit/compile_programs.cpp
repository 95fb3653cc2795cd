// compile_programs: build and look up in parallel, lower the misses in parallel, compile_all them,
// then give each a direct entry.
#include "jit/compile_programs.h"

#include <utility>

#include "support/parallel_for.h"

namespace monotile::jit {

CompiledPrograms compile_programs(Jit& jit, std::span<const std::function<dsl::Program()>> programs,
                                  const dsl::Target& target, const CompilePrograms& options) {
  CompiledPrograms all;
  const size_t n = programs.size();
  all.results.resize(n, absl::UnknownError("not compiled"));
  std::vector<std::optional<cache::KeyBuilder>> keys(n);
  std::vector<std::optional<absl::StatusOr<ProgramBuild>>> made(n);
  parallel_for(n, [&](size_t i) {
    const dsl::Program program = programs[i]();
    keys[i] = direct_key(jit, program, target, options.build, options.lowering_identity);
    if (keys[i]) {
      if (std::optional<CompiledProgram> found =
              recall_direct(jit, *keys[i], program, target, options.build)) {
        all.results[i] = std::move(*found);
        return;
      }
    }
    made[i] = make_build(program, target, options.build);
  });

  std::vector<size_t> lowered;
  std::vector<Build> builds;
  for (size_t i = 0; i < n; ++i) {
    if (!made[i]) {
      ++all.direct;
      continue;
    }
    if (!made[i]->ok()) {
      all.results[i] = made[i]->status();
      continue;
    }
    lowered.push_back(i);
    builds.push_back(std::move((*made[i])->build));
  }
  all.lowered = lowered.size();
  if (builds.empty()) return all;
  CompileAllResult compiled = compile_all(jit, builds, options.compile);
  all.compiled = compiled.misses;
  for (size_t b = 0; b < lowered.size(); ++b) {
    const size_t i = lowered[b];
    if (!compiled.results[b].ok()) {
      all.results[i] = compiled.results[b].status();
      continue;
    }
    if (keys[i])
      remember_direct(jit, *keys[i], builds[b], (*made[i])->params, *compiled.results[b]);
    all.results[i] =
        CompiledProgram{std::move(*compiled.results[b]), std::move((*made[i])->params)};
  }
  return all;
}

}  // namespace monotile::jit
