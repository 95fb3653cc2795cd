// tp_reasons: why a TP deployment cannot run yet. The kernels' reductions (o_proj's, the latent's,
// the final one) sum this rank's partials alone: no exchange between ranks runs, so at TP > 1 each
// rank would return its own partial sums as the layer's output. Until the exchanges run, TP > 1 is
// refused, except where a tool runs one rank alone and says that the other ranks' partial sums are
// stood in by zero (`other_ranks_stood_in`).
#pragma once

#include <string>
#include <vector>

#include "runtime/decode/group.h"
#include "runtime/decode/weight_reasons.h"

namespace monotile::runtime::decode {

// The deployment check's reason for TP `tp` (specialized_decode_config), or "" at TP 1.
std::string tp_deployment_reason(int tp);

// Construction's reasons (SpecializedDecode::create, agreed over `group`): a group of more than one
// rank, and a backbone of TP > 1 without a group that exchanges partial sums. None when
// `other_ranks_stood_in`: every rank of the group then runs alone.
std::vector<std::string> tp_reasons(const Backbone& backbone, const Group& group,
                                    bool other_ranks_stood_in);

// What a run of rank `rank` of TP `tp` alone says of its outputs: "TP 8 rank 0 alone: the other
// ranks' partial sums are stood in by zero in every reduction".
std::string other_ranks_stood_in_note(int tp, int rank);

}  // namespace monotile::runtime::decode
