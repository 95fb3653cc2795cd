// The key preimage, field by field; cache::KeyBuilder heads it with the entry format version.
#include "jit/build_key.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace monotile::jit {

cache::KeyBuilder build_key(const Build& build, std::string_view compiler_identity) {
  std::vector<std::string> headers;
  for (const Header& header : build.headers) {
    headers.push_back(absl::StrCat(header.name.size(), ":", header.name, header.content));
  }
  cache::KeyBuilder key;
  key.add("jit_version", kJitVersion)
      .add("generator_version", build.generator_version)
      .add("compiler", compiler_identity)
      .add("target", build.target.str())
      .add("kernel_name", build.kernel_name)
      .add_sorted("options", build.options)
      .add_sorted("headers", std::move(headers))
      .add("source", build.source);
  return key;
}

}  // namespace monotile::jit
