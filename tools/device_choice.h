// Which device a command runs on: `--device cpu` (the CPU interpreter), `--device gpu` (the first
// GPU discovery finds), or, when not given, a GPU if there is one and else the CPU.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "runtime/device.h"

namespace monotile::tools {

// NotFound naming each missing vendor's reason when a GPU is asked for and there is none;
// InvalidArgument for another name.
absl::StatusOr<std::unique_ptr<runtime::Device>> pick_device(const std::optional<std::string>& wanted);

}  // namespace monotile::tools
