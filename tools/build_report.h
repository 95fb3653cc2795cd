// Shared by `monotile warmup`, `demo` and `compile`: compile a list of builds with a progress bar on
// a terminal (plain lines otherwise), then print the table of builds with their resource reports.
#pragma once

#include <cstdio>
#include <functional>
#include <span>

#include "jit/build.h"
#include "jit/compile_all.h"
#include "jit/jit.h"

namespace monotile::tools {

// A compile_all progress callback writing to `progress`: a bar when it is a terminal, a count line
// per build otherwise.
std::function<void(const jit::CompileProgress&)> progress_printer(FILE* progress);

// compile_all with progress written to `progress` (progress_printer).
jit::CompileAllResult compile_with_progress(jit::Jit& jit, std::span<const jit::Build> builds, int jobs,
                                            FILE* progress);

// One row per build: name, target, registers, spills, shared memory, scratch, time, hit/miss;
// then the failures' messages and a summary line.
void print_build_table(FILE* out, std::span<const jit::Build> builds, const jit::CompileAllResult& result);

// The failures' messages, one per cause: builds whose messages differ only in their own name (a
// target the compiler refuses fails every build alike) are listed together under one message.
void print_build_errors(FILE* out, std::span<const jit::Build> builds, const jit::CompileAllResult& result);

}  // namespace monotile::tools
