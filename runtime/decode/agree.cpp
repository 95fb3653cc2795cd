// agree over Group::all_gather of one byte a rank (1: refuses).
#include "runtime/decode/agree.h"

#include "absl/strings/str_join.h"
#include "model/str_cat.h"

namespace monotile::runtime::decode {

using model::str_cat;

absl::Status agree(const std::vector<std::string>& reasons, Group& group, std::string_view what) {
  absl::StatusOr<std::vector<std::string>> votes = group.all_gather(reasons.empty() ? "0" : "1");
  if (!votes.ok()) {
    return absl::Status(votes.status().code(), str_cat("TP ranks could not agree on ", what, ": ",
                                                       votes.status().message()));
  }
  std::vector<int> refused;
  for (size_t rank = 0; rank < votes->size(); ++rank) {
    if ((*votes)[rank] != "0") refused.push_back(static_cast<int>(rank));
  }
  if (refused.empty()) return absl::OkStatus();
  std::string why = reasons.empty()
                        ? str_cat("another TP rank refused (rank", refused.size() > 1 ? "s " : " ",
                                  absl::StrJoin(refused, ", "), ")")
                        : absl::StrJoin(reasons, "; ");
  return absl::InvalidArgumentError(str_cat("the specialized decode does not support ", what, ": ",
                                            why,
                                            " (decode_backend \"auto\" runs the stock decode)"));
}

}  // namespace monotile::runtime::decode
