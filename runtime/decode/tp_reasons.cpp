// The TP refusals and the stand-in's note, worded once for the deployment check, construction and
// the tools.
#include "runtime/decode/tp_reasons.h"

#include <algorithm>
#include <iterator>

#include "model/str_cat.h"
#include "runtime/decode/decode_config.h"

namespace monotile::runtime::decode {
namespace {

using model::str_cat;

bool kernel_tp(int tp) {
  return std::find(std::begin(kKernelTpSizes), std::end(kKernelTpSizes), tp) !=
         std::end(kKernelTpSizes);
}

}  // namespace

std::string tp_deployment_reason(int tp) {
  if (tp == 1) return "";
  return str_cat(
      "TP ", tp,
      ": the kernels' reductions across TP ranks are checked on the CPU interpreter and at TP 2 "
      "with two processes on one GPU, not across GPUs yet, so a deployment could return wrong "
      "layer outputs unnoticed; expected TP 1");
}

std::vector<std::string> tp_reasons(const Backbone& backbone, const Group& group,
                                    bool other_ranks_stood_in) {
  std::vector<std::string> reasons;
  if (other_ranks_stood_in) return reasons;
  if (group.size() > 1 && (group.size() != backbone.tp || group.rank() != backbone.rank)) {
    reasons.push_back(
        str_cat("a group of ", group.size(), " TP ranks (this one rank ", group.rank(),
                ") for weights of TP ", backbone.tp, " rank ", backbone.rank,
                ": the kernels exchange partial sums with every rank of the group; expected the "
                "group of the weights' ",
                backbone.tp, " TP ranks, this one their rank ", backbone.rank));
  } else if (group.size() > 1 && !kernel_tp(group.size())) {
    reasons.push_back(
        str_cat("a group of ", group.size(),
                " TP ranks: the kernels exchange partial sums among 2, 4 or 8 ranks"));
  }
  if (group.size() == 1 && backbone.tp > 1) {
    reasons.push_back(
        str_cat("TP ", backbone.tp, " (rank ", backbone.rank,
                ") without a group of its TP ranks: the kernels exchange partial sums with "
                "the other ranks through the group, so alone this rank would return its own "
                "partial sums as each layer's output; expected TP 1, or the group of the ",
                backbone.tp, " TP ranks"));
  }
  return reasons;
}

std::string other_ranks_stood_in_note(int tp, int rank) {
  return str_cat("TP ", tp, " rank ", rank,
                 " alone: the other ranks' partial sums are stood in by zero in every reduction");
}

}  // namespace monotile::runtime::decode
