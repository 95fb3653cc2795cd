// A shared library opened with dlopen and kept open for the life of the process, so that the
// compilers' vendor libraries are optional at run time: a missing one is a Status, never a crash.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace monotile::jit {

class DynamicLibrary {
 public:
  // Tries each name in order (e.g. "libnvrtc.so.13", "libnvrtc.so"); the error lists every name
  // tried with dlerror()'s reason and a hint on LD_LIBRARY_PATH.
  static absl::StatusOr<DynamicLibrary> open(const std::vector<std::string>& names);

  // The address of `symbol`, or an error naming the symbol and the library.
  absl::StatusOr<void*> symbol(std::string_view name) const;

  // Loads every symbol into a function pointer of the right type in one call.
  template <typename Fn>
  absl::Status bind(std::string_view name, Fn*& out) const {
    absl::StatusOr<void*> found = symbol(name);
    if (!found.ok()) return found.status();
    out = reinterpret_cast<Fn*>(*found);
    return absl::OkStatus();
  }

  // The name that opened and the resolved file path (via dladdr), e.g.
  // "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153".
  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }

 private:
  void* handle_ = nullptr;  // never closed: vendor libraries do not support unloading well
  std::string name_;
  std::string path_;
};

}  // namespace monotile::jit
