// The tiny checkpoint generator. Every tensor the TP 1 plan expects is written, with the values of
// SeededWeights (model/seeded_weights.h) for the same seed, so a folder and its seed agree.
#include "model/tiny_checkpoint.h"

#include <filesystem>
#include <fstream>

#include "model/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/seeded_weights.h"
#include "model/shard_plan.h"
#include "nlohmann/json.hpp"
#include "support/status_macros.h"

namespace monotile::model {

namespace fs = std::filesystem;

absl::Status write_tiny_checkpoint(const std::string& dir, const TinyCheckpointOptions& options) {
  std::string_view config_text = embedded_config_json(options.config);
  if (config_text.empty()) {
    return absl::InvalidArgumentError(str_cat("no embedded config \"", options.config, "\"; expected one of: k3-tiny, k3"));
  }
  MT_ASSIGN_OR_RETURN(ModelConfig config, load_config(options.config));
  MT_ASSIGN_OR_RETURN(RankPlan plan, plan_rank(config, 1, 0));
  if (options.shards < 1 || options.shards > 999) {
    return absl::InvalidArgumentError(str_cat("shards is ", options.shards, "; expected 1..999"));
  }
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return absl::PermissionDeniedError(str_cat("cannot create \"", dir, "\": ", error.message()));
  {
    std::ofstream out(fs::path(dir) / "config.json");
    out << config_text << "\n";
    if (!out) return absl::DataLossError(str_cat("cannot write \"", dir, "/config.json\""));
  }
  MT_ASSIGN_OR_RETURN(std::unique_ptr<SeededWeights> weights, SeededWeights::create(config, options.seed));
  nlohmann::json weight_map = nlohmann::json::object();
  uint64_t total_size = 0;
  size_t next_layer = 0;
  for (int shard = 0; shard < options.shards; ++shard) {
    std::string file = absl::StrFormat("model-%05d-of-%05d.safetensors", shard + 1, options.shards);
    std::vector<TensorToWrite> tensors;
    // Layers split evenly by index; the model-level entry (last) goes to the last shard.
    size_t end = (shard + 1 == options.shards) ? plan.layers.size()
                                                : plan.layers.size() * static_cast<size_t>(shard + 1) / options.shards;
    for (; next_layer < end; ++next_layer) {
      for (const ExpectedTensor& expected : plan.layers[next_layer].expected) {
        const TensorInfo* info = weights->find(expected.name);
        if (info == nullptr) return absl::InternalError(str_cat("seeded weights lack \"", expected.name, "\""));
        TensorToWrite tensor{info->name, info->dtype, info->shape, std::vector<uint8_t>(info->nbytes())};
        MT_RETURN_IF_ERROR(weights->read(*info, 0, tensor.data));
        tensors.push_back(std::move(tensor));
        weight_map[expected.name] = file;
        total_size += tensors.back().data.size();
      }
    }
    MT_RETURN_IF_ERROR(write_safetensors((fs::path(dir) / file).string(), tensors, {{"format", "pt"}}));
  }
  nlohmann::json index = {{"metadata", {{"total_size", total_size}}}, {"weight_map", weight_map}};
  std::ofstream out(fs::path(dir) / "model.safetensors.index.json");
  out << index.dump(1) << "\n";
  if (!out) return absl::DataLossError(str_cat("cannot write \"", dir, "/model.safetensors.index.json\""));
  return absl::OkStatus();
}

}  // namespace monotile::model
