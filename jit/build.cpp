// Build -> CompileRequest.
#include "jit/build.h"

namespace monotile::jit {

CompileRequest Build::request() const {
  return CompileRequest{kernel_name, source, target, options, headers, name, {}, false, 0};
}

}  // namespace monotile::jit
