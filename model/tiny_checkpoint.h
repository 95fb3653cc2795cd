// A generated checkpoint in the published layout: config.json, `shards` safetensors files and
// model.safetensors.index.json, random weights scaled by 1/sqrt(fan-in) so activations stay finite
// through every layer, MXFP4 experts packed as the real checkpoint packs them.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace monotile::model {

struct TinyCheckpointOptions {
  std::string config = "k3-tiny";  // an embedded config's name
  uint64_t seed = 1;
  int shards = 2;
};

// Writes into `dir` (created when missing). Deterministic for one seed.
absl::Status write_tiny_checkpoint(const std::string& dir, const TinyCheckpointOptions& options);

}  // namespace monotile::model
