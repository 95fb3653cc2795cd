// The JIT: Build -> code object, through the kernel cache. compile_build reads as a list: compiler
// facts, key, look up, compile (isolated), check resources, store. A hit loads no compiler. One Jit per process is typical (compile_build()
// without a Jit uses the process's, configured from the environment); it is safe to share between
// threads.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cache/cache.h"
#include "jit/build.h"
#include "jit/compiler.h"
#include "jit/compiler_facts.h"

namespace monotile::jit {

struct JitConfig {
  cache::Config cache;
  CompilerOptions compiler;
  // Where the source of a build that failed to compile is kept for inspection. Empty: next to the
  // cache's writable folder, "<cache dir>-failed" (MONOTILE_JIT_FAILED_DIR overrides).
  std::filesystem::path failed_dir;
  // When set (MONOTILE_JIT_DUMP_DIR), every build compile_build handles is compiled afresh (the
  // cache is still filled) and its source, PTX or ISA, log and report are written here.
  std::filesystem::path dump_dir;
  // Whether a program's compiled build may be found by direct mode (jit/direct_mode.h) instead of
  // lowering it to find its key. MONOTILE_JIT_DIRECT_MODE=0 (or false, no, off) turns it off.
  bool direct_mode = true;

  static JitConfig from_environment();
};

class Jit {
 public:
  explicit Jit(JitConfig config);
  Jit(JitConfig config, std::unique_ptr<cache::Cache> cache);

  // The build's code object from the cache or compiled now; errors name the build, its key and
  // target, and carry the compiler log with the source lines it points at.
  absl::StatusOr<CompiledBuild> compile_build(const Build& build);

  // The build's key (what the cache hashes); fails only when the target has no compiler.
  absl::StatusOr<cache::KeyBuilder> key(const Build& build);

  // PTX (NVIDIA) or ISA (AMD) of the build, compiled afresh: a researcher's first debugging tool.
  absl::StatusOr<std::string> assembly(const Build& build);

  // The target's compiler, made once and shared; the error when the target has none or the
  // installed compiler cannot build it.
  absl::StatusOr<Compiler*> compiler(const dsl::Target& target);

  // What the target's compiler is (its identity, for keys) once its verdict on the target is known
  // to be ok: remembered in the cache, so that a warm process loads no compiler library at all.
  absl::StatusOr<CompilerFacts> compiler_facts(const dsl::Target& target);

  cache::Cache& cache() { return *cache_; }
  const JitConfig& config() const { return config_; }

  // The process's Jit, configured from the environment on first use.
  static Jit& process_default();

 private:
  absl::StatusOr<Compiler*> loaded_compiler(const dsl::Target& target);
  absl::StatusOr<CompilerFacts> find_compiler_facts(const dsl::Target& target);
  void warn_of_bundles_made_elsewhere(const dsl::Target& target, const std::string& key_identity) const;
  absl::StatusOr<cache::Entry> compile_entry(const Build& build, const cache::KeyBuilder& key, Compiler& compiler);
  std::string keep_failed_source(const Build& build, const cache::Key& key, const std::string& log);
  void dump(const Build& build, const CompileResult& result);

  JitConfig config_;
  std::unique_ptr<cache::Cache> cache_;
  absl::Mutex mutex_;
  absl::flat_hash_map<std::string, absl::StatusOr<std::unique_ptr<Compiler>>> compilers_ ABSL_GUARDED_BY(mutex_);
  absl::Mutex facts_mutex_;  // held while facts are found: one probe per target, not one per thread
  absl::flat_hash_map<std::string, absl::StatusOr<CompilerFacts>> facts_ ABSL_GUARDED_BY(facts_mutex_);
};

// A cache entry of `build` under `key` (compiled now, or found: `hit`) as a CompiledBuild, once its
// resource report passes the build's policy.
absl::StatusOr<CompiledBuild> compiled_build(const Build& build, const cache::Key& key, cache::Entry entry,
                                             const std::string& compiler_identity, bool hit);

// Jit::process_default().compile_build(build).
absl::StatusOr<CompiledBuild> compile_build(const Build& build);

}  // namespace monotile::jit
