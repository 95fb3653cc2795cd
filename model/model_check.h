// `monotile model check`: the config summary, each layer's kind, the bytes one rank reads per layer
// and in all, the per-rank shapes of one layer of each kind, and every weight reason.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace monotile::model {

struct ModelCheck {
  std::string report;                // the text printed
  std::vector<std::string> reasons;  // empty: supported
};

// `name_or_dir` is an embedded config's name (no tensors to check: config reasons only) or a
// checkpoint folder. A config or checkpoint that cannot be read is one reason.
ModelCheck check_model(std::string_view name_or_dir, int tp, int rank);

}  // namespace monotile::model
