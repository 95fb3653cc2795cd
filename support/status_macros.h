// Status plumbing shared by every module: early return on error, and context added on the way up.
#pragma once

#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace monotile {

// Returns `status` with `context` prepended ("context: message"), keeping its code.
inline absl::Status with_context(const absl::Status& status, std::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(absl::string_view(context.data(), context.size()), ": ", status.message()));
}

}  // namespace monotile

#define MT_STATUS_CONCAT_INNER(a, b) a##b
#define MT_STATUS_CONCAT(a, b) MT_STATUS_CONCAT_INNER(a, b)

// MT_RETURN_IF_ERROR(expr): returns the absl::Status of `expr` from the caller when it is not ok.
#define MT_RETURN_IF_ERROR(expr)                              \
  do {                                                        \
    ::absl::Status mt_status_ = (expr);                       \
    if (!mt_status_.ok()) [[unlikely]] return mt_status_;     \
  } while (0)

// MT_ASSIGN_OR_RETURN(lhs, expr): evaluates a StatusOr; returns its status on error, else assigns.
#define MT_ASSIGN_OR_RETURN(lhs, expr) \
  MT_ASSIGN_OR_RETURN_IMPL(MT_STATUS_CONCAT(mt_statusor_, __LINE__), lhs, expr)
#define MT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) [[unlikely]] return tmp.status(); \
  lhs = std::move(tmp).value()
