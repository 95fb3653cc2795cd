// What the lowering passes share: the program being lowered, the target, and the per-value facts
// the analyses attach (layouts, axis info). Passes read the facts of earlier passes, never rewrite them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dsl/ir.h"
#include "dsl/lower/axis_info.h"
#include "dsl/lower/layout.h"
#include "dsl/lower/lower.h"
#include "dsl/target.h"

namespace monotile::dsl::lower {

struct LoweringState {
  Program program;
  Target target;
  LowerOptions options;
  // Per value: its layout, or nullopt for a "lazy" tile (constants, aranges, broadcasts and pure
  // elementwise ops of those) that is materialized in whatever layout each user needs.
  std::vector<std::optional<Layout>> layouts;
  std::vector<AxisInfo> axis;  // per value
  // Per tile shape: the narrowest element any load or store of that shape moves (bytes); the
  // default blocked layout of the shape gives each thread 16 bytes of it.
  std::map<std::vector<int64_t>, int> access_bytes;
  std::vector<PassDump> dumps;

  Layout scalar_layout() const { return Layout::scalar(target.warp_size(), program.options.num_warps); }
};

}  // namespace monotile::dsl::lower
