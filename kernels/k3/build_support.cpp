#include "kernels/k3/build_support.h"

#include <cstring>

#include "dsl/error.h"

namespace monotile::kernels::k3 {

void require(bool ok, const SourceLocation& loc, const std::string& kernel, const std::string& what,
             const std::string& expected, const std::string& actual, const std::string& hint) {
  if (!ok) throw dsl::Error(dsl::SourceLoc::from(loc), kernel, what, expected, actual, hint);
}

std::string scalar_suffix(std::initializer_list<float> floats, std::initializer_list<int64_t> integers) {
  uint64_t fold = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { fold = (fold ^ v) * 1099511628211ull; };
  for (float v : floats) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    mix(bits);
  }
  for (int64_t v : integers) mix(static_cast<uint64_t>(v));
  static const char* digits = "0123456789abcdef";
  std::string out = "_x";
  for (int i = 0; i < 8; ++i) out += digits[(fold >> (60 - 4 * i)) & 15];
  return out;
}

std::vector<std::string> parameter_names(const dsl::Program& program) {
  std::vector<std::string> names;
  for (const auto& param : program.params) names.push_back(param.name);
  return names;
}

}  // namespace monotile::kernels::k3
