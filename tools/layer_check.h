// `monotile layer run --check`: a run's outputs against the float64 reference (kernels/reference/,
// bf16 rounding points), each by its rule (kernels/k3/k1_check.h), printed as one table. K1's
// outputs are judged from the step's inputs; K2's from the core it read (K1's output, or the FFN
// layer's input) and the reference's prefix and blocks, so each kernel is held to its own bound.
#pragma once

#include "absl/status/statusor.h"
#include "tools/layer_io.h"
#include "tools/layer_weights.h"

namespace monotile::tools {

// Prints the table (and each failure's first value) to stdout; true when every output passes.
// Errors: the reference weights could not be loaded, or the reference refused the step.
absl::StatusOr<bool> check_layer(const LayerModel& model, const LayerStep& step,
                                 const LayerShape& shape, const LayerOutputs& outputs);

}  // namespace monotile::tools
