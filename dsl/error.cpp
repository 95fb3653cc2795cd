// dsl::Error formatting.
#include "dsl/error.h"

#include <utility>

namespace monotile::dsl {

Error::Error(SourceLoc loc, std::string op, std::string what, std::string expected,
             std::string actual, std::string hint)
    : loc_(std::move(loc)),
      op_(std::move(op)),
      summary_(std::move(what)),
      expected_(std::move(expected)),
      actual_(std::move(actual)),
      hint_(std::move(hint)) {
  message_ = op_ + " at " + loc_.str() + ": " + summary_;
  if (!hint_.empty()) message_ += "; hint: " + hint_;
}

}  // namespace monotile::dsl
