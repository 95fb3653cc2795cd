// cache_reasons: every reason the kernels cannot read the KDA states a host bound (the seed's
// cache_reasons, extended with the shapes and strides K1 takes as parameters, kernels/k3/k1.h).
#pragma once

#include <string>
#include <vector>

#include "model/config.h"
#include "runtime/decode/tensor_view.h"

namespace monotile::runtime::decode {

// One KDA layer's (conv, recurrent) pair as the host bound it. The conv state is channels-last
// [slots, state_len, 3 Pl] or dim-first [slots, 3 Pl, state_len], told apart by where 3 Pl sits;
// the recurrent state is V-first [slots, NHl, head_dim, head_dim].
struct KdaCache {
  std::string layer;  // the layer's name, as messages quote it
  TensorView conv;
  TensorView recurrent;
};

// Every reason, by layer, not only the first: a conv dtype other than bf16; a recurrent dtype
// other than fp32 (and, only when it is fp32, a slot that is not dense [NHl, head_dim, head_dim] or
// a slot stride that is not a multiple of 4 elements); a conv shape that is neither layout, a
// state_len below q + 2, conv strides that are not positive or let slots overlap; slot counts that
// differ between the pair. `dims` gives NHl and Pl for this rank.
std::vector<std::string> cache_reasons(const std::vector<KdaCache>& caches,
                                       const model::ModelConfig& config,
                                       const model::RankDims& dims, int q);

}  // namespace monotile::runtime::decode
