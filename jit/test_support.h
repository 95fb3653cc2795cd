// Helpers for tests that compile: a temporary folder removed at scope exit, a Jit whose cache lives
// in it, and the reason to skip when the installed compilers cannot build a target.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <span>
#include <string>

#include "jit/build_key.h"
#include "jit/compiler.h"
#include "jit/compiler_facts.h"
#include "jit/jit.h"
#include "jit/resource_report.h"

namespace monotile::jit::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "monotile-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code error;
    std::filesystem::remove_all(path_, error);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// A JitConfig whose cache and failed-source folders are under `dir` and not the user's.
inline JitConfig config_in(const std::filesystem::path& dir) {
  JitConfig config;
  config.cache.writable_dir = dir / "cache";
  config.failed_dir = dir / "failed";
  return config;
}

// Why `target` cannot be compiled here (a missing library, an unsupported target), or nothing.
inline std::optional<std::string> missing_compiler(const char* target) {
  absl::StatusOr<std::unique_ptr<Compiler>> compiler = make_compiler(*dsl::Target::parse(target));
  if (compiler.ok()) return std::nullopt;
  return std::string(compiler.status().message());
}

// Makes `jit`'s cache answer for `target` as if a compiler named `compiler` were installed and had
// compiled `builds` (each entry an empty code object with an empty report), so that the warm path
// can be walked where that compiler is not installed and nothing could load the code.
inline void pretend_compiled(Jit& jit, const dsl::Target& target, std::span<const Build> builds,
                             const std::string& compiler = "pretend-compiler 1") {
  remember_compiler_facts(jit.cache(), target, {compiler, compiler, {}});
  remember_target_verdict(jit.cache(), compiler, target, absl::OkStatus());
  cache::Entry entry;
  entry.resource_report = ResourceReport{}.to_text();
  entry.metadata = {{"compiler", compiler}};
  for (const Build& build : builds) jit.cache().store(build_key(build, compiler), entry).IgnoreError();
}

}  // namespace monotile::jit::testing

// Skips the test, with the reason, when the compiler for `target` is not installed.
#define MT_SKIP_WITHOUT_COMPILER(target)                                             \
  do {                                                                               \
    if (auto reason = ::monotile::jit::testing::missing_compiler(target)) {          \
      GTEST_SKIP() << "no compiler for " << (target) << ": " << *reason;             \
    }                                                                                \
  } while (0)
