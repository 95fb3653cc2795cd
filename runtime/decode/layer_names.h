// The host's names of a rank's decoder layers. vLLM keys a step's attention metadata and the KV
// caches by each attention module's prefix ("language_model.model.layers.1.self_attn"), so plan
// routes on, and prepare_kv matches caches by, the names the host's modules have: the layers'
// prefix from the Backbone, or from the config (model::ModelConfig::layers_prefix) where the
// Backbone leaves it empty.
#pragma once

#include <string>
#include <string_view>

#include "runtime/decode/weight_reasons.h"

namespace monotile::runtime::decode {

// The decoder layers' module prefix this backbone's names use ("language_model.model.layers").
std::string_view layers_prefix(const Backbone& backbone);

// Layer `layer`'s attention module: "<layers_prefix>.<layer>.self_attn".
std::string attention_name(std::string_view layers_prefix, int layer);

}  // namespace monotile::runtime::decode
