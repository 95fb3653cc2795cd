// The executor's build list; see executor_builds.h.
#include "runtime/decode/executor_builds.h"

#include <set>
#include <string>

#include "jit/program_build.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {

absl::StatusOr<std::vector<LayerBuilds>> executor_builds(const model::ModelConfig& model, const model::RankDims& dims,
                                                         int start_layer, int end_layer, const DecodeConfig& config,
                                                         const dsl::Target& target) {
  std::vector<LayerBuilds> layers;
  const int64_t mla_core = int64_t{dims.mla_heads} * model.v_head_dim;
  for (int layer = start_layer; layer < end_layer; ++layer) {
    const model::ServedKind kind = model.served_kind(layer);
    if (kind == model::ServedKind::kNone) continue;
    LayerBuilds& l = layers.emplace_back();
    l.layer = layer;
    l.kind = kind;
    const bool whole = kind == model::ServedKind::kWhole;
    l.core_width = static_cast<int>(whole ? dims.kda_projection : mla_core);
    for (int width : config.widths()) {
      MT_ASSIGN_OR_RETURN(kernels::k3::K2Build k2, kernels::k3::k2_build(model, dims, layer, l.core_width, width));
      l.k2[width] = kernels::k3::k2_for_target(k2, target);
      if (!whole) continue;
      MT_ASSIGN_OR_RETURN(l.k1[width],
                          layer_k1_build(model, dims, layer, width, config.q, default_state_len(config), target));
    }
  }
  return layers;
}

absl::StatusOr<kernels::k3::K1Build> layer_k1_build(const model::ModelConfig& model, const model::RankDims& dims,
                                                    int layer, int width, int q, int state_len,
                                                    const dsl::Target& target) {
  MT_ASSIGN_OR_RETURN(kernels::k3::K1Build k1,
                      kernels::k3::k1_build(model, layer, dims.kda_heads, static_cast<int>(dims.in_proj_rows), width,
                                            q, state_len, /*delta=*/true));
  return kernels::k3::k1_for_target(k1, target);
}

absl::StatusOr<std::vector<jit::Build>> lowered_builds(const std::vector<LayerBuilds>& layers,
                                                       const dsl::Target& target) {
  std::set<std::string> seen;
  std::vector<jit::Build> builds;
  auto add = [&](const dsl::Program& program) -> absl::Status {
    if (!seen.insert(program.name).second) return absl::OkStatus();
    MT_ASSIGN_OR_RETURN(jit::ProgramBuild made, jit::make_build(program, target));
    builds.push_back(std::move(made.build));
    return absl::OkStatus();
  };
  for (const LayerBuilds& l : layers) {
    for (const auto& [width, build] : l.k1) {
      if (seen.contains(kernels::k3::k1_name(build))) continue;
      MT_RETURN_IF_ERROR(add(kernels::k3::k1_program(build)));
    }
    for (const auto& [width, build] : l.k2) {
      if (seen.contains(kernels::k3::k2_name(build))) continue;
      MT_RETURN_IF_ERROR(add(kernels::k3::k2_program(build)));
    }
  }
  return builds;
}

}  // namespace monotile::runtime::decode
