// The decoder layers' names; see layer_names.h.
#include "runtime/decode/layer_names.h"

#include "model/str_cat.h"

namespace monotile::runtime::decode {

std::string_view layers_prefix(const Backbone& backbone) {
  if (!backbone.layers_prefix.empty() || backbone.config == nullptr) return backbone.layers_prefix;
  return backbone.config->layers_prefix;
}

std::string attention_name(std::string_view layers_prefix, int layer) {
  return model::str_cat(layers_prefix, ".", layer, ".self_attn");
}

}  // namespace monotile::runtime::decode
