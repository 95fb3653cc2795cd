// Direct mode, as ccache's: a program's compiled build found from the program itself, without
// lowering it. A build's own key hashes the lowered source, so finding it costs a lowering; a
// direct entry's key names instead everything that decides that source (the program's stable text,
// the target, the lowering's options and the identity of the lowering code) and everything besides
// the source that decides the code object (the JIT's version, the compiler's identity, extra
// flags). The entry holds the code object with its report and log, and what lowering said about
// the launch (kernel name, block, dynamic shared memory, parameters).
//
// A direct entry is only ever a shortcut: one that is missing, corrupt, of another format or that
// fails the resource check reads as a miss, and the caller lowers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "dsl/ir.h"
#include "dsl/lower/lower.h"
#include "dsl/target.h"
#include "jit/build.h"
#include "jit/jit.h"
#include "jit/program_build.h"

namespace monotile::jit {

// A program lowered and compiled: the code object and the signature launches are checked against.
struct CompiledProgram {
  CompiledBuild compiled;
  std::vector<dsl::lower::KernelParam> params;
};

// The direct key of `program` for `target` under `lowering_identity`
// (dsl::lower::lowering_identity()), or nothing where a direct entry cannot stand in for lowering:
// direct mode off in the JIT's config, no identity, a lowering asked to dump its passes or write
// #line directives, a JIT that dumps what it compiles, or a target without a compiler.
std::optional<cache::KeyBuilder> direct_key(Jit& jit, const dsl::Program& program,
                                            const dsl::Target& target,
                                            const ProgramBuildOptions& options,
                                            const std::optional<std::string>& lowering_identity);

// The compiled program under `key`, or nothing (any reason reads as a miss).
std::optional<CompiledProgram> recall_direct(Jit& jit, const cache::KeyBuilder& key,
                                             const dsl::Program& program, const dsl::Target& target,
                                             const ProgramBuildOptions& options);

// Stores `build` (made with `params`), compiled as `compiled`, under `key`; a cache that cannot
// store only forgets.
void remember_direct(Jit& jit, const cache::KeyBuilder& key, const Build& build,
                     const std::vector<dsl::lower::KernelParam>& params,
                     const CompiledBuild& compiled);

}  // namespace monotile::jit
