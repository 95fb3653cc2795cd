// Status to exception: InvalidArgument is the library's refusal, the rest are faults.
#include "python/src/status_errors.h"

#include <nanobind/nanobind.h>

#include <stdexcept>

namespace monotile::python {

void raise_status(const absl::Status& status) {
  const std::string message(status.message());
  if (status.code() == absl::StatusCode::kInvalidArgument)
    throw nanobind::value_error(message.c_str());
  throw std::runtime_error(message);
}

void raise_refusal(const std::string& message) {
  throw nanobind::value_error(message.c_str());
}

std::string python_error_text(const nanobind::python_error& error) {
  nanobind::gil_scoped_acquire gil;
  std::string text = nanobind::type_name(error.type()).c_str();
  const std::string value = nanobind::str(error.value()).c_str();
  if (!value.empty()) text += ": " + value;
  return text;
}

}  // namespace monotile::python
