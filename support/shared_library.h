// SharedLibrary: a vendor library (a driver, a compiler) opened with dlopen at run time, so one binary
// runs with an NVIDIA GPU, an AMD GPU or none, and builds with neither SDK. Never closed (vendor
// libraries do not support unloading well); a missing library or symbol is a Status naming it and
// dlerror()'s reason, never a crash.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace monotile {

class SharedLibrary {
 public:
  // Tries each name in order; the first that opens wins. The error lists every attempt:
  //   dlopen("libamdhip64.so.6") failed: <dlerror>; dlopen("libamdhip64.so.5") failed: <dlerror>
  static absl::StatusOr<SharedLibrary> open(const std::vector<std::string>& names);

  // The address of `name`, or NotFound: `symbol "<name>" not found in <path>: <dlerror>`.
  absl::StatusOr<void*> symbol(std::string_view name) const;

  // Resolves `name` into a function pointer of the declared type.
  template <typename Fn>
  absl::Status bind(std::string_view name, Fn*& out) const {
    absl::StatusOr<void*> address = symbol(name);
    if (!address.ok()) return address.status();
    out = reinterpret_cast<Fn*>(*address);
    return absl::OkStatus();
  }

  // The name that opened ("libamdhip64.so.5").
  const std::string& name() const { return name_; }
  // The file it resolved to, e.g. "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153" (part of the
  // compilers' identities in cache keys).
  const std::string& path() const { return path_; }

 private:
  void* handle_ = nullptr;
  std::string name_;
  std::string path_;
};

}  // namespace monotile
