// The layer steps a tool makes instead of reading them: a valid random step for a rank's shapes
// (`monotile layer inputs` writes it), and one rank's part of a TP 1 step, so that a layer at TP 1
// and its ranks at TP > 1 run the same step (layer_tp_bench).
#pragma once

#include <cstdint>

#include "tools/layer_io.h"

namespace monotile::tools {

struct RandomStep {
  int requests = 1, q = 2;
  int64_t state_len = 4;   // KDA: the conv state's entries a slot (at least q + 2)
  int64_t slots = 5;       // KDA: cache slots (at least requests x q + 1: slot 0 is the null slot)
  int padded = 0;          // KDA: the last `padded` requests padded as vLLM pads (fewer than all)
  bool delta = true;       // KDA: a deferred delta
  bool dim_first = false;  // KDA: the conv state dim-first
  uint64_t seed = 1;
};

// A KDA layer's step when shape.attention (values uniform with mean 0 and variance 1 for the
// prefix, blocks and conv state, 1/4 for the delta, 1/100 for the recurrent state; every live token
// its own slot, a random permutation of 1..slots-1; num_accepted uniform in 1..q; padded requests
// with every slot 0, one accepted token and query_start_loc the last real end repeated), else an
// FFN layer's (the prefix, blocks and core of variance 1, query_start_loc). The options' limits
// are the caller's to check.
LayerStep random_layer_step(const LayerShape& shape, const RandomStep& options);

// Rank `rank` of `tp`'s part of `whole`, a step of the layer at TP 1 (`whole_shape`): a KDA
// layer's conv state keeps the rank's channels of q, k and v and its recurrent state the rank's
// heads; an FFN layer's core keeps the rank's columns (its heads' v_head_dim each); the rest is
// replicated (k3_checkpoint.md 3's head split: rank r's heads are r x NHl .. (r + 1) x NHl - 1).
LayerStep rank_layer_step(const LayerStep& whole, const LayerShape& whole_shape,
                          const LayerShape& rank_shape, int rank);

}  // namespace monotile::tools
