// Helpers for the cache's tests: a scratch directory removed afterwards, entries of a given size,
// keys by name, and file ages. Test-only; not part of monotile_cache. Tests read and write whole
// files with support/files.h.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cache/cache.h"

namespace monotile::cache::testing {

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/monotile-cache-test-XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() {
    std::error_code error;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, error);
    std::filesystem::remove_all(path_, error);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// A key builder as the JIT would fill it, distinct per `name`.
inline KeyBuilder key_for(const std::string& name) {
  KeyBuilder builder;
  builder.add("lowering", "test-lowering-1")
      .add("source", "extern \"C\" __global__ void " + name + "() {}\n")
      .add("compiler", "nvrtc 13.0")
      .add("target", "sm_90a")
      .add_sorted("options", {"-arch=sm_90a", "-Xptxas", "-v"});
  return builder;
}

// An entry whose sections all differ and whose code object has `size` bytes.
inline Entry entry_of_size(size_t size, char fill = 'c', const std::string& kernel = "kernel") {
  Entry entry;
  entry.code_object.resize(size);
  for (size_t i = 0; i < size; ++i) entry.code_object[i] = static_cast<char>(fill + (i % 7));
  entry.resource_report = "registers 40, spills 0, shared 16384";
  entry.compile_log = "ptxas info: used 40 registers";
  entry.metadata = {{"kernel", kernel}, {"target", "sm_90a"}};
  return entry;
}

// Sets a file's modification time to `seconds_ago` before now.
inline void set_age(const std::filesystem::path& path, long seconds_ago) {
  timespec times[2];
  clock_gettime(CLOCK_REALTIME, &times[0]);
  times[0].tv_sec -= seconds_ago;
  times[1] = times[0];
  utimensat(AT_FDCWD, path.c_str(), times, 0);
}

}  // namespace monotile::cache::testing
