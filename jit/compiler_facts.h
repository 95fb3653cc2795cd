// What the installed compiler for a target is, and whether it builds that target, remembered in the
// kernel cache: a process whose builds are all cached never loads a compiler library (NVRTC's
// dlopen alone costs ~10 ms) just to learn the identity its cache keys hash.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cache/cache.h"
#include "dsl/target.h"

namespace monotile::jit {

struct CompilerFacts {
  std::string identity;      // Compiler::identity()
  std::string key_identity;  // Compiler::key_identity()
  std::vector<std::string> files;  // Compiler::files(): checked unchanged before the facts are reused
};

// The remembered facts of the compiler this process would load for `target`'s vendor, if the cache
// holds them and nothing that decides which library loads, or what it is, has changed: the
// library search settings (LD_LIBRARY_PATH and its folders, ld.so.cache, this program) and the size,
// time and inode of every file in `files`.
std::optional<CompilerFacts> recall_compiler_facts(cache::Cache& cache, const dsl::Target& target);
void remember_compiler_facts(cache::Cache& cache, const dsl::Target& target, const CompilerFacts& facts);

// The verdict of check_compiler_target for the compiler `key_identity` on `target`, remembered: a
// probe compile runs once per compiler and target, not once per process. Only refusals of the
// target itself (FailedPrecondition) and successes are remembered.
std::optional<absl::Status> recall_target_verdict(cache::Cache& cache, const std::string& key_identity,
                                                  const dsl::Target& target);
void remember_target_verdict(cache::Cache& cache, const std::string& key_identity, const dsl::Target& target,
                             const absl::Status& verdict);

}  // namespace monotile::jit
