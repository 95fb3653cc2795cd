// Build -> CompileRequest.
#include "jit/build.h"

namespace monotile::jit {

CompileRequest Build::request() const {
  return CompileRequest{.kernel_name = kernel_name,
                        .source = source,
                        .target = target,
                        .options = options,
                        .headers = headers,
                        .build_name = name};
}

}  // namespace monotile::jit
