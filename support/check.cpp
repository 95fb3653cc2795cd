// Prints a failed invariant with its place and aborts (a core dump is more useful than an exception).
#include "support/check.h"

#include <cstdio>
#include <cstdlib>

namespace monotile {

void check_failed(std::string_view condition, std::string_view message,
                  SourceLocation where) {
  std::fprintf(stderr, "monotile internal error at %s:%u: check '%.*s' failed%s%.*s\n",
               where.file_name(), where.line(), static_cast<int>(condition.size()),
               condition.data(), message.empty() ? "" : ": ", static_cast<int>(message.size()),
               message.data());
  std::abort();
}

}  // namespace monotile
