// dlopen/dlsym behind SharedLibrary; see shared_library.h.
#include "support/shared_library.h"

#include <dlfcn.h>
#include <link.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/strings.h"

namespace monotile {
namespace {

// The canonical file behind an open handle, or `fallback` when the loader does not say.
std::string resolved_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr || map->l_name == nullptr ||
      map->l_name[0] == '\0') {
    return fallback;
  }
  std::error_code error;
  std::filesystem::path real = std::filesystem::canonical(map->l_name, error);
  return error ? std::string(map->l_name) : real.string();
}

}  // namespace

absl::StatusOr<SharedLibrary> SharedLibrary::open(const std::vector<std::string>& names) {
  std::vector<std::string> failures;
  for (const std::string& name : names) {
    dlerror();
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      SharedLibrary library;
      library.handle_ = handle;
      library.name_ = name;
      library.path_ = resolved_path(handle, name);
      return library;
    }
    const char* reason = dlerror();
    failures.push_back(absl::StrCat("dlopen(\"", name, "\") failed: ",
                                    reason != nullptr ? reason : "unknown reason"));
  }
  if (failures.empty()) return absl::InvalidArgumentError("no library name to dlopen");
  return absl::NotFoundError(absl::StrJoin(failures, "; "));
}

absl::StatusOr<void*> SharedLibrary::symbol(std::string_view name) const {
  const std::string owned(name);
  dlerror();
  void* address = dlsym(handle_, owned.c_str());
  if (address != nullptr) return address;
  const char* reason = dlerror();
  return absl::NotFoundError(absl::StrCat("symbol \"", owned, "\" not found in ", path_, ": ",
                                          reason != nullptr ? reason : "it resolves to null"));
}

}  // namespace monotile
