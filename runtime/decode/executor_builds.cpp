// The executor's build list; see executor_builds.h.
#include "runtime/decode/executor_builds.h"

#include <set>
#include <string>
#include <utility>

#include "jit/program_build.h"
#include "runtime/decode/tensor_view.h"
#include "support/parallel_for.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {

// The executor's builds take the default lowering options: weight_reasons and cache_reasons refuse
// views that are not aligned as those builds assume.
static_assert(dsl::lower::LowerOptions{}.pointer_alignment == kKernelPointerAlignment);

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

kernels::k3::K1Build k1_linear_choice(const kernels::k3::K1Build& build) {
  kernels::k3::K1Build model_wide = build;
  model_wide.linear_in_proj = true;
  return kernels::k3::k1_linear_refusal(model_wide).empty() ? kernels::k3::k1_linear_sized(build) : build;
}

std::vector<LayerBuilds> with_k1_linear(std::vector<LayerBuilds> layers) {
  for (LayerBuilds& l : layers) {
    for (auto& [width, build] : l.k1) build = k1_linear_choice(build);
  }
  return layers;
}

std::vector<LayerBuilds> exchanging_builds(std::vector<LayerBuilds> layers, int tp, int rank) {
  for (LayerBuilds& l : layers) {
    for (auto& [width, build] : l.k2) {
      build.tp = tp;
      build.rank = rank;
    }
  }
  return layers;
}

std::vector<std::function<dsl::Program()>> executor_programs(const std::vector<LayerBuilds>& layers) {
  std::set<std::string> seen;
  std::vector<std::function<dsl::Program()>> programs;
  for (const LayerBuilds& l : layers) {
    for (const auto& [width, build] : l.k1) {
      if (!seen.insert(kernels::k3::k1_name(build)).second) continue;
      programs.push_back([build] { return kernels::k3::k1_program(build); });
    }
    for (const auto& [width, build] : l.k2) {
      if (!seen.insert(kernels::k3::k2_name(build)).second) continue;
      programs.push_back([build] { return kernels::k3::k2_program(build); });
    }
  }
  return programs;
}

absl::StatusOr<std::vector<jit::Build>> lowered_builds(const std::vector<LayerBuilds>& layers,
                                                       const dsl::Target& target) {
  const std::vector<std::function<dsl::Program()>> programs = executor_programs(layers);
  std::vector<absl::StatusOr<jit::ProgramBuild>> made(programs.size(), absl::UnknownError("not lowered"));
  parallel_for(programs.size(), [&](size_t i) { made[i] = jit::make_build(programs[i](), target); });
  std::vector<jit::Build> builds;
  for (absl::StatusOr<jit::ProgramBuild>& m : made) {
    if (!m.ok()) return m.status();
    builds.push_back(std::move(m->build));
  }
  return builds;
}

}  // namespace monotile::runtime::decode
