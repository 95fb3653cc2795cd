// Checkpoint tensor names from the one table in tensor_names.h.
#include "model/tensor_names.h"

#include "model/str_cat.h"

namespace monotile::model {

std::string model_tensor(std::string_view name) { return str_cat(kTensorNames.model_prefix, name); }

std::string layer_tensor(int layer, std::string_view suffix) {
  return str_cat(kTensorNames.model_prefix, kTensorNames.layer_prefix, layer, ".", suffix);
}

std::string expert_tensor(int layer, int expert, std::string_view w, std::string_view part) {
  return layer_tensor(layer, str_cat(kTensorNames.moe, kTensorNames.experts, expert, ".", w, ".", part));
}

}  // namespace monotile::model
