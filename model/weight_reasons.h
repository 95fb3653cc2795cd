// Every reason one TP rank's kernels cannot serve a checkpoint, not only the first (the seed's
// weight_reasons, seed_source.md 1.4): the config's (no served layer, scaling, no latent MoE with
// shared experts, experts not MXFP4, KDA shapes the kernels are not written for) and each tensor's
// (missing, shape, dtype, strided, misaligned, non-finite values in the small fp32 tensors).
// An empty list means supported.
#pragma once

#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/shard_plan.h"

namespace monotile::model {

// The config's own reasons: these need no checkpoint.
std::vector<std::string> config_reasons(const ModelConfig& config);

// config_reasons plus every expected tensor of `plan` checked in `checkpoint`.
std::vector<std::string> weight_reasons(const ModelConfig& config, const RankPlan& plan, const Checkpoint& checkpoint);

}  // namespace monotile::model
