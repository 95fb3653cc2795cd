// dlopen/dlsym behind SharedLibrary; see shared_library.h.
#include "runtime/shared_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace monotile::runtime {

absl::StatusOr<SharedLibrary> SharedLibrary::open(const std::vector<std::string>& names) {
  std::vector<std::string> failures;
  for (const std::string& name : names) {
    dlerror();
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      SharedLibrary library;
      library.handle_ = handle;
      library.name_ = name;
      return library;
    }
    const char* reason = dlerror();
    failures.push_back(absl::StrCat("dlopen(\"", name, "\") failed: ",
                                    reason != nullptr ? reason : "unknown reason"));
  }
  if (failures.empty()) return absl::InvalidArgumentError("no library name to dlopen");
  return absl::NotFoundError(absl::StrJoin(failures, "; "));
}

absl::StatusOr<void*> SharedLibrary::symbol(const std::string& name) const {
  dlerror();
  void* address = dlsym(handle_, name.c_str());
  if (address != nullptr) return address;
  const char* reason = dlerror();
  return absl::NotFoundError(absl::StrCat("symbol \"", name, "\" not found in ", name_, ": ",
                                          reason != nullptr ? reason : "it resolves to null"));
}

}  // namespace monotile::runtime
