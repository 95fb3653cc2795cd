// agree: one verdict on every TP rank. A rank that refused alone would leave its peers spinning
// in-kernel, so when any rank has reasons, every rank refuses.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "runtime/decode/group.h"

namespace monotile::runtime::decode {

// OK when no rank has reasons. Otherwise InvalidArgument on every rank: "the specialized decode
// does not support <what>: <this rank's reasons joined by "; ">", or "another TP rank refused
// (rank 3)" on a rank with none, then the hint that decode_backend "auto" runs the stock decode.
// A failing all_gather is returned with `what` added.
absl::Status agree(const std::vector<std::string>& reasons, Group& group, std::string_view what);

// The outcome of work each rank does on its own (allocating, compiling, loading) agreed, so that no
// rank goes on into a collective its peers have left: OK when `local` is OK on every rank.
// Otherwise every rank fails: a failed rank with its own status, `what` added; the others Aborted,
// "<what> failed on another TP rank (rank 3)". A failing all_gather is returned with `what` added.
absl::Status agree_outcome(const absl::Status& local, Group& group, std::string_view what);

}  // namespace monotile::runtime::decode
