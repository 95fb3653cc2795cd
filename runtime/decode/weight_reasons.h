// weight_reasons: every reason this rank's kernels cannot read the loaded weights in place (the
// seed's weight_reasons): the config's reasons, then each served layer's tensors against the shapes
// model::plan_rank gives this rank.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "runtime/decode/tensor_view.h"

namespace monotile::runtime::decode {

// The one layout the kernels read the MXFP4 experts in: the checkpoint's own bytes
// (block_sparse_moe.experts.w13_weight / w2_weight, two e2m1 codes a byte along the input, and
// their E8M0 scales, one a 32 inputs), split on the intermediate as model::plan_rank plans them.
inline constexpr std::string_view kCheckpointExpertsLayout = "checkpoint";

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
  // The layout of the MXFP4 experts' bytes in `weights`, as the host declares it. A MoE backend
  // that re-lays them after loading (a swizzle, shuffle or repack for its own kernel) keeps their
  // shapes and dtypes, so the views cannot tell: the host says what it holds. Anything but
  // kCheckpointExpertsLayout, and nothing declared, is refused: the kernels would read wrong
  // values.
  std::string experts_layout = "";
};

// Every reason, not only the first, each naming the layer and weight with what was expected and
// found: model::config_reasons, a layers prefix ending in a dot, experts in another layout than
// the checkpoint's (or none declared), a TP split the config refuses, no served layer in the range,
// and per served layer in range each weight its kernels read (a KDA layer's every weight; an MLA
// layer's MLP AttnRes, MoE and o_proj) missing, of another dtype or shape, or not contiguous.
std::vector<std::string> weight_reasons(const Backbone& backbone);

}  // namespace monotile::runtime::decode
