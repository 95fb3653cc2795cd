// tp_reasons: when a TP deployment cannot run. K2's reductions (o_proj's, the latent's, the final
// one) exchange partial sums with every rank of the executor's group over the peer buffers
// (kernels/k3/peer_exchange.h), so a backbone of TP t runs with the group of its t ranks, this
// rank at its own rank. Refused: a group that is not the backbone's TP group, a TP the kernels do
// not exchange over, and a backbone of TP > 1 without a group (it would return its own partial sums
// as each layer's output); none where a tool runs one rank alone and says that the other ranks'
// partial sums are stood in by zero (`other_ranks_stood_in`). The deployment check still refuses
// TP > 1 (but where a tool runs every rank to check the exchanges, DecodeOptions::
// checking_exchanges): they are checked on the interpreter and with ranks sharing one GPU, not
// across GPUs.
#pragma once

#include <string>
#include <vector>

#include "runtime/decode/group.h"
#include "runtime/decode/weight_reasons.h"

namespace monotile::runtime::decode {

// The deployment check's reason for TP `tp` (specialized_decode_config), or "" at TP 1: where the
// exchanges have been checked, and that a deployment across GPUs is not yet served.
std::string tp_deployment_reason(int tp);

// Construction's reasons (SpecializedDecode::create, agreed over `group`): a group of more than one
// rank whose size or this rank differ from the backbone's TP and rank, a group of a size outside
// 2, 4 and 8, a backbone of TP > 1 with a group of one rank. None when `other_ranks_stood_in`:
// every rank of the group then runs alone. (A device that cannot map its peers' memory refuses when
// the executor makes the peer buffer: PeerBuffer::create.)
std::vector<std::string> tp_reasons(const Backbone& backbone, const Group& group,
                                    bool other_ranks_stood_in);

// What a run of rank `rank` of TP `tp` alone says of its outputs: "TP 8 rank 0 alone: the other
// ranks' partial sums are stood in by zero in every reduction".
std::string other_ranks_stood_in_note(int tp, int rank);

}  // namespace monotile::runtime::decode
