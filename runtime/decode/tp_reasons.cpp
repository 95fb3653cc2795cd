// The TP refusals and the stand-in's note, worded once for the deployment check, construction and
// the tools.
#include "runtime/decode/tp_reasons.h"

#include "model/str_cat.h"

namespace monotile::runtime::decode {
namespace {

using model::str_cat;

constexpr const char* kNoExchange =
    "the kernels' reductions do not exchange partial sums between TP ranks yet";

}  // namespace

std::string tp_deployment_reason(int tp) {
  if (tp == 1) return "";
  return str_cat(
      "TP ", tp, ": ", kNoExchange,
      ", so every rank would return its own partial sums as each layer's output; expected TP 1");
}

std::vector<std::string> tp_reasons(const Backbone& backbone, const Group& group,
                                    bool other_ranks_stood_in) {
  std::vector<std::string> reasons;
  if (other_ranks_stood_in) return reasons;
  if (group.size() > 1) {
    reasons.push_back(str_cat("a group of ", group.size(), " TP ranks: ", kNoExchange,
                              "; expected a group of one rank"));
  }
  if (backbone.tp > 1) {
    reasons.push_back(
        str_cat("TP ", backbone.tp, " (rank ", backbone.rank,
                ") without a group that exchanges partial sums: ", kNoExchange,
                ", so this rank would return its own partial sums as each layer's output; "
                "expected TP 1"));
  }
  return reasons;
}

std::string other_ranks_stood_in_note(int tp, int rank) {
  return str_cat("TP ", tp, " rank ", rank,
                 " alone: the other ranks' partial sums are stood in by zero in every reduction");
}

}  // namespace monotile::runtime::decode
