// C++ errors as Python exceptions, the messages unchanged: a refusal (InvalidArgument: what the
// caller gave cannot be served) raises ValueError, every other error (a fault: a driver call, a
// compile, a re-bound cache, a rank that gave up a wait) raises RuntimeError.
#pragma once

#include <nanobind/nanobind.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace monotile::python {

[[noreturn]] void raise_status(const absl::Status& status);
[[noreturn]] void raise_refusal(const std::string& message);  // ValueError

// A Python exception as one line, "KeyError: 'x'", for a C++ error that carries it (no traceback).
std::string python_error_text(const nanobind::python_error& error);

inline void check(const absl::Status& status) {
  if (!status.ok()) raise_status(status);
}

template <typename T>
T value(absl::StatusOr<T> result) {
  if (!result.ok()) raise_status(result.status());
  return std::move(*result);
}

}  // namespace monotile::python
