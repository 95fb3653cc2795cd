// Test-only: compiles a host-emulation source (generated AMD code plus host_emulation_hip.h) with the
// host compiler into a shared object and loads it. With MONOTILE_EMULATION_CACHE set, the object is
// kept in that folder under a hash of the source, the flags and the emulation header, so that runs
// over many seeds (scripts/seed_sweep.sh) compile each kernel once: the source never depends on
// the seed, only the inputs do.
#pragma once

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "xxhash.h"

namespace monotile::dsl::lower::testing {

// `stem` names the scratch files (`stem`.cpp, .so, .log); returns the dlopen handle.
inline absl::StatusOr<void*> build_host_emulation(const std::string& source, const std::string& flags,
                                                  const std::filesystem::path& stem) {
  std::filesystem::path object = stem.string() + ".so";
  const char* cache = std::getenv("MONOTILE_EMULATION_CACHE");
  const bool cached = cache != nullptr && *cache != '\0';
  if (cached) {
    std::ifstream header(MONOTILE_HOST_EMULATION);
    const std::string key = std::string(std::istreambuf_iterator<char>(header), {}) + '\0' + flags + '\0' + source;
    std::filesystem::create_directories(cache);
    object = std::filesystem::path(cache) / absl::StrFormat("%016x.so", XXH3_64bits(key.data(), key.size()));
  }
  // Without the cache the stem's object is rebuilt every time: one left by an earlier run may come
  // from another source.
  if (!cached || !std::filesystem::exists(object)) {
    std::ofstream(stem.string() + ".cpp") << source;
    const std::string staged = object.string() + "." + std::to_string(::getpid());
    const std::string command = std::string(MONOTILE_HOST_CXX) + " " + flags + " " + stem.string() + ".cpp -o " +
                                staged + " 2> " + stem.string() + ".log";
    if (std::system(command.c_str()) != 0) return absl::InternalError("host compile failed, see " + stem.string() + ".log");
    std::filesystem::rename(staged, object);  // whole or absent, for a concurrent reader
  }
  void* library = dlopen(object.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return absl::InternalError(dlerror());
  return library;
}

}  // namespace monotile::dsl::lower::testing
