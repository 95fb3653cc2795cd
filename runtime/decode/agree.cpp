// agree over Group::all_gather of one byte a rank (1: refuses).
#include "runtime/decode/agree.h"

#include "absl/strings/str_join.h"
#include "model/str_cat.h"

namespace monotile::runtime::decode {

using model::str_cat;

namespace {

// The ranks that voted no, in rank order.
absl::StatusOr<std::vector<int>> refusing_ranks(bool refuses, Group& group, std::string_view what) {
  absl::StatusOr<std::vector<std::string>> votes = group.all_gather(refuses ? "1" : "0");
  if (!votes.ok()) {
    return absl::Status(votes.status().code(), str_cat("TP ranks could not agree on ", what, ": ",
                                                       votes.status().message()));
  }
  std::vector<int> refused;
  for (size_t rank = 0; rank < votes->size(); ++rank) {
    if ((*votes)[rank] != "0") refused.push_back(static_cast<int>(rank));
  }
  return refused;
}

std::string rank_list(const std::vector<int>& ranks) {
  return str_cat("rank", ranks.size() > 1 ? "s " : " ", absl::StrJoin(ranks, ", "));
}

}  // namespace

absl::Status agree(const std::vector<std::string>& reasons, Group& group, std::string_view what) {
  absl::StatusOr<std::vector<int>> votes = refusing_ranks(!reasons.empty(), group, what);
  if (!votes.ok()) return votes.status();
  const std::vector<int>& refused = *votes;
  if (refused.empty()) return absl::OkStatus();
  std::string why = reasons.empty() ? str_cat("another TP rank refused (", rank_list(refused), ")")
                                    : absl::StrJoin(reasons, "; ");
  return absl::InvalidArgumentError(str_cat("the specialized decode does not support ", what, ": ",
                                            why,
                                            " (decode_backend \"auto\" runs the stock decode)"));
}

absl::Status agree_outcome(const absl::Status& local, Group& group, std::string_view what) {
  absl::StatusOr<std::vector<int>> votes = refusing_ranks(!local.ok(), group, what);
  if (!votes.ok()) return votes.status();
  if (votes->empty()) return absl::OkStatus();
  if (!local.ok()) return absl::Status(local.code(), str_cat(what, ": ", local.message()));
  return absl::AbortedError(str_cat(what, " failed on another TP rank (", rank_list(*votes), ")"));
}

}  // namespace monotile::runtime::decode
