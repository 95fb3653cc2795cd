// weight_reasons: every reason this rank's kernels cannot read the loaded weights in place (the
// seed's weight_reasons): the config's reasons, then each served layer's tensors against the shapes
// model::plan_rank gives this rank.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "runtime/decode/tensor_view.h"

namespace monotile::runtime::decode {

// The model as loaded on one rank: its config, its weight views by layer and parameter name
// (relative to the layer, "block_sparse_moe.gate.weight"), the layers this rank runs, and the
// names the host gives them.
struct Backbone {
  const model::ModelConfig* config = nullptr;
  int tp = 1;
  int rank = 0;
  int start_layer = 0;  // [start_layer, end_layer)
  int end_layer = 0;
  std::map<int, std::map<std::string, TensorView, std::less<>>> weights;
  // The decoder layers' module prefix as the host names them, without the index or its dot: layer
  // N's attention is "<layers_prefix>.N.self_attn", the key of its attention metadata and KV cache
  // (vLLM: the layers' `prefix`, "language_model.model.layers" for the published checkpoint).
  // Empty: the config's (model::ModelConfig::layers_prefix).
  std::string layers_prefix = "";
};

// Every reason, not only the first, each naming the layer and weight with what was expected and
// found: model::config_reasons, a layers prefix ending in a dot, a TP split the config refuses, no
// served layer in the range, and per served layer in range each weight its kernels read (a KDA
// layer's every weight; an MLA layer's MLP AttnRes, MoE and o_proj) missing, of another dtype or
// shape, or not contiguous.
std::vector<std::string> weight_reasons(const Backbone& backbone);

}  // namespace monotile::runtime::decode
