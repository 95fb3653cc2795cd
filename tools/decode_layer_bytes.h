// The bytes one decoder layer must move in a decode step, for the step's floor (bytes / the copy
// bandwidth measured in the same run): the weights it reads, the KV state it reads and writes, the
// activations it passes on. The routed experts' MXFP4 slices count for the distinct experts chosen
// (StepShape::chosen_experts) or, where the route is not known, those that uniform routing of the
// step's rows is expected to choose, E (1 - (1 - top_k/E)^rows), since
// K2 reads only the chosen ones; scratch, flags and the router's logits are left out.
#pragma once

#include <cstdint>

#include "model/config.h"
#include "model/shard_plan.h"

namespace monotile::tools {

struct StepShape {
  int requests = 0, q = 0;
  int64_t conv_state_len = 0;  // a KDA layer's conv state entries a slot
  int64_t mla_context = 0;     // an MLA layer's cached tokens a request reads (mean)
  // The distinct experts the step's rows chose where the route is known (a benchmark's run); < 0:
  // the count uniform routing is expected to choose.
  double chosen_experts = -1;
};

struct LayerBytes {
  double weights = 0, state = 0, activations = 0;
  double total() const { return weights + state + activations; }
};

LayerBytes layer_bytes(const model::ModelConfig& config, const model::LayerPlan& layer,
                       const model::RankDims& dims, const StepShape& step);

}  // namespace monotile::tools
