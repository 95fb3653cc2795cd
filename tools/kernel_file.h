// A researcher's kernel file (dsl/kernel_file.h) made into programs: found the installed package,
// built the file with the C++ compiler into a shared object against the package's headers and
// libmonotile.so, loaded it, and called its MONOTILE_KERNEL entries for a target.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "dsl/ir.h"
#include "dsl/target.h"

namespace monotile::tools {

// Where the package's headers and library are.
struct Package {
  std::filesystem::path include_dir;  // holds monotile/dsl/dsl.h
  std::filesystem::path library_dir;  // holds libmonotile.so
};

// MONOTILE_PACKAGE_DIR (a prefix) when set; else the prefix this tool is installed in; else, for a
// tool run from its build tree, that tree. NotFound lists where it looked.
absl::StatusOr<Package> find_package();

// One MONOTILE_KERNEL line of a loaded file.
struct FileKernel {
  std::string expression;  // "gated_rms_norm(7168, 1e-6f)"
  std::string where;       // "gated_rms_norm.cpp:58"
  dsl::Program (*make)(const dsl::Target& target);
};

// Compiles `file` (a path as the user gave it: the compiler's messages and the DSL's errors quote
// it) with $CXX or g++ (and $CXXFLAGS) into a shared object, loads it (never unloaded: programs keep pointing into
// it) and returns its kernels in line order. The compiler's own messages go to stderr as it writes
// them; the error then says the file did not compile. Errors: a missing file (NotFound), a file
// that registers no kernel, a compiler that cannot be run.
absl::StatusOr<std::vector<FileKernel>> load_kernel_file(const std::filesystem::path& file,
                                                         const Package& package);

// The kernel's program for `target`; a dsl::Error (or any exception) it throws becomes
// InvalidArgument naming the kernel, its MONOTILE_KERNEL line and the target, with the DSL's
// message (which names the line of the mistake, expected and actual, and a hint).
absl::StatusOr<dsl::Program> build_file_kernel(const FileKernel& kernel, const dsl::Target& target);

}  // namespace monotile::tools
