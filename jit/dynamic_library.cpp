// dlopen wrapper: open by a list of candidate names, resolve symbols, find the real file path.
#include "jit/dynamic_library.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/strings.h"

namespace monotile::jit {

absl::StatusOr<DynamicLibrary> DynamicLibrary::open(const std::vector<std::string>& names) {
  std::vector<std::string> reasons;
  for (const std::string& name : names) {
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* reason = dlerror();
      reasons.push_back(reason != nullptr ? reason : name);
      continue;
    }
    DynamicLibrary library;
    library.handle_ = handle;
    library.name_ = name;
    library.path_ = name;
    link_map* map = nullptr;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
        map->l_name[0] != '\0') {
      std::error_code error;
      std::filesystem::path real = std::filesystem::canonical(map->l_name, error);
      library.path_ = error ? std::string(map->l_name) : real.string();
    }
    return library;
  }
  return absl::NotFoundError(absl::StrCat(
      "could not load ", names.empty() ? "a library" : names.front(), " (tried ",
      absl::StrJoin(names, ", "), "): ", absl::StrJoin(reasons, "; "),
      "; hint: install it or add its folder to LD_LIBRARY_PATH"));
}

absl::StatusOr<void*> DynamicLibrary::symbol(std::string_view name) const {
  std::string owned(name);
  dlerror();
  void* address = dlsym(handle_, owned.c_str());
  if (address == nullptr) {
    return absl::NotFoundError(absl::StrCat("symbol \"", owned, "\" not found in ", path_,
                                            "; hint: the library is older than expected"));
  }
  return address;
}

}  // namespace monotile::jit
