// The bytes a compile request and its result travel as between the caller and the worker
// process: named, length-prefixed fields, so any source or code object passes through unchanged.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "jit/compiler.h"

namespace monotile::jit {

std::string encode_request(const CompileRequest& request);
absl::StatusOr<CompileRequest> decode_request(std::string_view bytes);

// An error result travels as its code and message and decodes to the same Status.
std::string encode_result(const absl::StatusOr<CompileResult>& result);
absl::StatusOr<CompileResult> decode_result(std::string_view bytes);

}  // namespace monotile::jit
