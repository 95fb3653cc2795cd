// The tiny checkpoint generator. Every tensor the TP 1 plan expects is written, with values drawn
// by the tensor's role (norm weights near 1, projections of variance 1/fan-in, A_log = log of 1..16).
#include "model/tiny_checkpoint.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "absl/strings/match.h"
#include "model/str_cat.h"
#include "absl/strings/str_format.h"
#include "model/config.h"
#include "model/mxfp4.h"
#include "model/safetensors.h"
#include "model/shard_plan.h"
#include "nlohmann/json.hpp"
#include "support/status_macros.h"

namespace monotile::model {
namespace {

namespace fs = std::filesystem;

void put_bf16(std::vector<uint8_t>& data, size_t i, double value) {
  uint16_t bits = bf16_from_double(value);
  std::memcpy(data.data() + 2 * i, &bits, 2);
}

void put_f32(std::vector<uint8_t>& data, size_t i, double value) {
  float narrowed = static_cast<float>(value);
  std::memcpy(data.data() + 4 * i, &narrowed, 4);
}

// Values for one tensor, chosen by what the tensor is.
TensorToWrite make_tensor(const ExpectedTensor& expected, std::mt19937_64& rng) {
  TensorToWrite tensor{expected.name, expected.dtype, expected.shape, {}};
  if (absl::EndsWith(expected.name, "A_log")) tensor.shape = {(expected.shape[0] * 4 + 2) / 3};  // [128] for 96 heads
  int64_t elements = 1;
  for (int64_t dim : tensor.shape) elements *= dim;
  tensor.data.assign(static_cast<size_t>(elements) * dtype_size(tensor.dtype), 0);
  // Uniform draws: cheap, and the scale is all that matters. `normal` has mean 0 and variance 1.
  auto uniform = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
  auto normal = [&] { return (uniform() - 0.5) * std::sqrt(12.0); };
  const std::string& name = expected.name;
  int64_t fan_in = tensor.shape.size() >= 2 ? tensor.shape.back() : 1;
  if (absl::EndsWith(name, "weight_packed")) {
    for (uint8_t& byte : tensor.data) byte = static_cast<uint8_t>(rng() & 0xff);
    return tensor;
  }
  if (absl::EndsWith(name, "weight_scale")) {
    // e2m1 codes have rms ~ 2.8; the scale brings a row's weights to ~ 1/sqrt(fan-in), fan-in
    // being 32 times the scale columns.
    int64_t inputs = fan_in * 32;
    int base = 127 + static_cast<int>(std::lround(std::log2(1.0 / (2.8 * std::sqrt(static_cast<double>(inputs))))));
    for (uint8_t& byte : tensor.data) byte = static_cast<uint8_t>(base + static_cast<int>(rng() % 2));
    return tensor;
  }
  enum class Role { kNorm, kALog, kDtBias, kBias, kConv, kEmbedding, kProjection };
  Role role = absl::EndsWith(name, "norm.weight")               ? Role::kNorm
              : absl::EndsWith(name, "A_log")                   ? Role::kALog
              : absl::EndsWith(name, "dt_bias")                 ? Role::kDtBias
              : absl::EndsWith(name, "e_score_correction_bias") ? Role::kBias
              : absl::StrContains(name, "conv1d")               ? Role::kConv
              : absl::StrContains(name, "embed_tokens")         ? Role::kEmbedding
                                                                : Role::kProjection;
  const double projection_scale = 1.0 / std::sqrt(static_cast<double>(fan_in));
  for (int64_t i = 0; i < elements; ++i) {
    double value;
    switch (role) {
      case Role::kNorm: value = 1.0 + 0.1 * (uniform() - 0.5); break;
      case Role::kALog: value = std::log(1.0 + 15.0 * uniform()); break;
      case Role::kDtBias: value = 0.5 * normal(); break;
      case Role::kBias: value = 0.01 * normal(); break;
      case Role::kConv: value = 0.5 * normal(); break;
      case Role::kEmbedding: value = normal(); break;
      case Role::kProjection: value = normal() * projection_scale; break;
    }
    if (tensor.dtype == Dtype::kF32) {
      put_f32(tensor.data, static_cast<size_t>(i), value);
    } else {
      put_bf16(tensor.data, static_cast<size_t>(i), value);
    }
  }
  return tensor;
}

}  // namespace

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
  std::mt19937_64 rng(options.seed);
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
        tensors.push_back(make_tensor(expected, rng));
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
