// Building a kernel file. The file becomes a shared object that links the package's libmonotile.so
// and is loaded into this process with dlopen. Why a shared object: the DSL program is a C++ value
// built by running the researcher's code, and the JIT, the cache and the report printing are
// already here; running the code in a child process would need the program serialized across, and
// generating a CMake project would cost a configure step (seconds) per call. g++ (or $CXX) is run
// directly with the flags the package's layout gives, so nothing but a compiler is needed.
// The tool itself carries its own copy of the library; the file's calls resolve inside the loaded
// object (RTLD_LOCAL, and the tool exports no symbols), and only plain values (Program, the DSL's
// Error) cross between the two copies, which are built from the same headers.
#include "tools/kernel_file.h"

#include <dlfcn.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "dsl/error.h"
#include "dsl/kernel_file.h"

extern char** environ;

namespace monotile::tools {
namespace {

constexpr const char* kEntrySymbol = "monotile_kernel_file_v1";

std::filesystem::path this_program() {
  std::error_code error;
  return std::filesystem::read_symlink("/proc/self/exe", error);
}

// A prefix is a package when it has the DSL's headers and the library.
bool package_at(const std::filesystem::path& include_dir,
                const std::filesystem::path& library_dir) {
  std::error_code error;
  return std::filesystem::exists(include_dir / "monotile" / "dsl" / "kernel_file.h", error) &&
         std::filesystem::exists(library_dir / "libmonotile.so", error);
}

std::string shell_quoted(const std::vector<std::string>& words) {
  std::vector<std::string> quoted;
  for (const std::string& word : words) {
    quoted.push_back(
        word.find_first_of(" \t'\"$\\") == std::string::npos ? word : absl::StrCat("'", word, "'"));
  }
  return absl::StrJoin(quoted, " ");
}

// Runs `argv` with this process's stdout and stderr; its exit status, or an error when it could not
// be started.
absl::StatusOr<int> run(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  if (int error = ::posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ);
      error != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run the C++ compiler \"", argv[0], "\": ", std::strerror(error),
                     "; hint: install g++, or set CXX to a C++20 compiler"));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return absl::InternalError(absl::StrCat("waitpid failed: ", std::strerror(errno)));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "monotile-compile-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code error;
    if (!path_.empty()) std::filesystem::remove_all(path_, error);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace

absl::StatusOr<Package> find_package() {
  std::vector<std::string> looked;
  auto try_prefix = [&](const std::filesystem::path& prefix) -> std::optional<Package> {
    const std::filesystem::path include_dir = prefix / "include";
    for (const char* libdir : {MONOTILE_INSTALL_LIBDIR, "lib", "lib64"}) {
      if (package_at(include_dir, prefix / libdir)) return Package{include_dir, prefix / libdir};
    }
    looked.push_back(prefix.string());
    return std::nullopt;
  };
  if (const char* env = std::getenv("MONOTILE_PACKAGE_DIR"); env != nullptr && *env) {
    if (std::optional<Package> found = try_prefix(env)) return *found;
    return absl::NotFoundError(
        absl::StrCat("MONOTILE_PACKAGE_DIR \"", env, "\" holds no monotile package (",
                     "include/monotile/dsl/kernel_file.h and libmonotile.so); hint: "
                     "set it to the prefix given to cmake --install"));
  }
  if (const std::filesystem::path program = this_program(); !program.empty()) {
    if (std::optional<Package> found = try_prefix(program.parent_path().parent_path()))
      return *found;
  }
#ifdef MONOTILE_BUILD_TREE_INCLUDE_DIR
  // A tool run from its build tree: the tree's include folder and its libmonotile.so.
  if (package_at(MONOTILE_BUILD_TREE_INCLUDE_DIR, MONOTILE_BUILD_TREE_LIBRARY_DIR)) {
    return Package{MONOTILE_BUILD_TREE_INCLUDE_DIR, MONOTILE_BUILD_TREE_LIBRARY_DIR};
  }
  looked.push_back(absl::StrCat(MONOTILE_BUILD_TREE_LIBRARY_DIR, " (the build tree)"));
#endif
  return absl::NotFoundError(
      absl::StrCat("no monotile package found to build a kernel file against (looked in ",
                   absl::StrJoin(looked, ", "),
                   "); hint: install the package (cmake --install BUILD --prefix DIR) and run "
                   "DIR/bin/monotile, or set "
                   "MONOTILE_PACKAGE_DIR=DIR; in a build tree, build the monotile_shared target"));
}

absl::StatusOr<std::vector<FileKernel>> load_kernel_file(const std::filesystem::path& file,
                                                         const Package& package) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(file, error)) {
    return absl::NotFoundError(
        absl::StrCat("kernel file \"", file.string(), "\" does not exist",
                     std::filesystem::exists(file, error) ? " as a regular file" : "",
                     "; hint: give the path of a .cpp that uses MONOTILE_KERNEL, or a "
                     "registered kernel's name (monotile compile --list)"));
  }
  TempDir dir;
  if (dir.path().empty()) {
    return absl::InternalError(
        absl::StrCat("cannot create a temporary folder: ", std::strerror(errno)));
  }
  const std::filesystem::path object = dir.path() / "kernel_file.so";
  std::vector<std::string> argv;
  const char* cxx = std::getenv("CXX");
  for (absl::string_view word :
       absl::StrSplit(cxx != nullptr && *cxx ? cxx : "g++", ' ', absl::SkipEmpty())) {
    argv.emplace_back(word);
  }
  // -O0: the file only builds programs (milliseconds); the kernels' speed is the JIT's business.
  for (std::string flag : {"-std=c++20", "-fPIC", "-shared", "-O0"}) argv.push_back(flag);
  argv.push_back(absl::StrCat("-I", package.include_dir.string()));
  argv.push_back(absl::StrCat("-I", (package.include_dir / "monotile").string()));
#ifdef MONOTILE_ABSL_INCLUDE_DIR
  argv.push_back(absl::StrCat("-isystem", MONOTILE_ABSL_INCLUDE_DIR));
#endif
  // The user's own flags last but before the file: -I for their headers, -D, warnings.
  const char* cxxflags = std::getenv("CXXFLAGS");
  for (absl::string_view word : absl::StrSplit(cxxflags != nullptr ? cxxflags : "", ' ', absl::SkipEmpty())) {
    argv.emplace_back(word);
  }
  argv.push_back(file.string());
  argv.push_back("-o");
  argv.push_back(object.string());
  argv.push_back(absl::StrCat("-L", package.library_dir.string()));
  argv.push_back(absl::StrCat("-Wl,-rpath,", package.library_dir.string()));
  argv.push_back("-lmonotile");
  absl::StatusOr<int> status = run(argv);
  if (!status.ok()) return status.status();
  if (*status != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel file \"", file.string(), "\" did not compile (", argv[0], " exited with ", *status,
        "; its messages are above); the command was: ", shell_quoted(argv)));
  }
  void* handle = ::dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot load the built kernel file \"", file.string(), "\": ", ::dlerror()));
  }
  using EntriesFn = const dsl::kernel_file::Entry* (*)(std::size_t*);
  auto entries = reinterpret_cast<EntriesFn>(::dlsym(handle, kEntrySymbol));
  std::size_t count = 0;
  const dsl::kernel_file::Entry* first = entries != nullptr ? entries(&count) : nullptr;
  if (count == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel file \"", file.string(), "\" names no kernel to compile",
        entries == nullptr ? " (it does not include <monotile/dsl/kernel_file.h>)" : "",
        "; hint: after the function that builds the program, add a line such as "
        "MONOTILE_KERNEL(my_kernel(7168));"));
  }
  std::vector<FileKernel> kernels;
  for (std::size_t i = 0; i < count; ++i) {
    const dsl::kernel_file::Entry& entry = first[i];
    kernels.push_back(
        {entry.expression,
         absl::StrCat(std::filesystem::path(entry.file).filename().string(), ":", entry.line),
         entry.make});
  }
  return kernels;
}

absl::StatusOr<dsl::Program> build_file_kernel(const FileKernel& kernel,
                                               const dsl::Target& target) {
  auto refused = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("kernel \"", kernel.expression,
                                                   "\" (MONOTILE_KERNEL at ", kernel.where,
                                                   ") for ", target.str(), ": ", what));
  };
  try {
    return kernel.make(target);
  } catch (const dsl::Error& error) {
    return refused(error.what());
  } catch (const std::exception& error) {
    return refused(absl::StrCat("threw ", error.what()));
  }
}

}  // namespace monotile::tools
