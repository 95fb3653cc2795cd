// The kernel builds an executor makes: for every layer it serves, K2 at every width and, for a KDA
// layer, K1 at every width with the conv state_len the seed precompiles (q + 2). SpecializedDecode
// builds from this list, and `monotile warmup --model` compiles the same list on a machine without
// a GPU, so that an executor started over that cache compiles nothing.
#pragma once

#include <functional>
#include <map>
#include <vector>

#include "absl/status/statusor.h"
#include "dsl/ir.h"
#include "dsl/target.h"
#include "jit/build.h"
#include "kernels/k3/k1.h"
#include "kernels/k3/k2.h"
#include "model/config.h"
#include "runtime/decode/decode_config.h"

namespace monotile::runtime::decode {

struct LayerBuilds {
  int layer = 0;
  model::ServedKind kind = model::ServedKind::kNone;
  int core_width = 0;                         // o_proj's input columns on this rank
  std::map<int, kernels::k3::K1Build> k1;     // by width (KDA layers)
  std::map<int, kernels::k3::K2Build> k2;     // by width
};

// The served layers of [start_layer, end_layer) on the rank of `dims`, shaped for `target`
// (k1_for_target, k2_for_target). Refused as k1_build and k2_build refuse, naming the layer.
absl::StatusOr<std::vector<LayerBuilds>> executor_builds(const model::ModelConfig& model, const model::RankDims& dims,
                                                         int start_layer, int end_layer, const DecodeConfig& config,
                                                         const dsl::Target& target);

// `layers` as an executor whose group exchanges builds them: TP `tp` > 1, this rank `rank`, every
// K2 reducing across the group over the peer buffers (K2Build::tp, rank); K1 is rank-local.
std::vector<LayerBuilds> exchanging_builds(std::vector<LayerBuilds> layers, int tp, int rank);

// K1 with its linear in_proj (ExecutorOptions::k1_linear, k1.h K1Build::linear_in_proj): the
// layer's build sized for its own block sources (k1_linear_sized) where the width's build at the
// model's max_blocks takes the form (k1_linear_refusal), so that a width runs one form at every
// layer; `build` itself elsewhere (K3: 12 and 16 tokens).
kernels::k3::K1Build k1_linear_choice(const kernels::k3::K1Build& build);

// `layers` with every K1 build as k1_linear_choice makes it (`monotile warmup --k1-linear`).
std::vector<LayerBuilds> with_k1_linear(std::vector<LayerBuilds> layers);

// K1 of a served KDA layer at `width` for a conv state of `state_len` entries, shaped for `target`:
// the seed's key, with a pending delta (a served layer always follows another layer).
absl::StatusOr<kernels::k3::K1Build> layer_k1_build(const model::ModelConfig& model, const model::RankDims& dims,
                                                    int layer, int width, int q, int state_len,
                                                    const dsl::Target& target);

// Every distinct build of `layers`, once each (by build name), as functions making its program:
// what the executor loads (jit::compile_programs runs them on every core).
std::vector<std::function<dsl::Program()>> executor_programs(const std::vector<LayerBuilds>& layers);

// Every distinct build of `layers` lowered for `target` (jit::make_build), once each: what the
// executor compiles, for `monotile warmup --model`.
absl::StatusOr<std::vector<jit::Build>> lowered_builds(const std::vector<LayerBuilds>& layers,
                                                       const dsl::Target& target);

// The conv state_len K1 is built for before a KV cache is bound (the seed's 3 + num_spec).
inline int default_state_len(const DecodeConfig& config) { return config.q + 2; }

}  // namespace monotile::runtime::decode
