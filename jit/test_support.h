// Helpers for tests that compile: a temporary folder removed at scope exit, a Jit whose cache lives
// in it, and the reason to skip when the installed compilers cannot build a target.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>

#include "jit/compiler.h"
#include "jit/jit.h"

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

}  // namespace monotile::jit::testing

// Skips the test, with the reason, when the compiler for `target` is not installed.
#define MT_SKIP_WITHOUT_COMPILER(target)                                             \
  do {                                                                               \
    if (auto reason = ::monotile::jit::testing::missing_compiler(target)) {          \
      GTEST_SKIP() << "no compiler for " << (target) << ": " << *reason;             \
    }                                                                                \
  } while (0)
