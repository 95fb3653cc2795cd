// The executor's host costs at K3's real shapes (TP 8, rank 0, q 4, every width up to 16), on the
// CPU device with views that are never read (plan and Step::layer touch no tensor):
//   - construction: weight checks, every layer's builds, the programs loaded;
//   - plan + Step::layer for every decoder layer, per step (the goal: under 2 us for 92 layers).
#include <chrono>
#include <cstdio>

#include "model/config.h"
#include "model/shard_plan.h"
#include "runtime/decode/specialized_decode.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"

namespace dec = monotile::runtime::decode;
using monotile::runtime::ProgramCatalog;

int main() {
  const monotile::model::ModelConfig config = *monotile::model::load_config("k3");
  const int tp = 8, rank = 0, q = 4;
  const monotile::model::RankPlan plan = *monotile::model::plan_rank(config, tp, rank);
  // Views with the plan's shapes at one address no one reads.
  constexpr uint64_t kNowhere = 0x1000;
  dec::Backbone backbone{.config = &config, .tp = tp, .rank = rank, .start_layer = 0,
                         .end_layer = config.num_hidden_layers, .weights = {}};
  for (const monotile::model::LayerPlan& layer : plan.layers) {
    if (layer.layer < 0) continue;
    for (const monotile::model::RankTensor& t : layer.tensors) {
      backbone.weights[layer.layer][t.name] = dec::TensorView::dense(t.dtype, t.shape, kNowhere);
    }
  }
  std::unique_ptr<monotile::runtime::Device> device =
      monotile::runtime::make_cpu_device(monotile::runtime::interpreter_loader(ProgramCatalog::process()));
  std::unique_ptr<dec::Group> group = dec::make_single_process_group();
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<dec::SpecializedDecode>> made =
      dec::SpecializedDecode::create(backbone, {.q = q, .max_rows = 16}, *group, *device,
                                     monotile::jit::Jit::process_default(),
                                     {.on_progress = nullptr, .log = [](const std::string& l) { std::printf("%s\n", l.c_str()); }});
  if (!made.ok()) {
    std::fprintf(stderr, "executor_bench: %s\n", std::string(made.status().message()).c_str());
    return 1;
  }
  dec::SpecializedDecode& decode = **made;
  const double construction = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const monotile::model::RankDims dims = *monotile::model::rank_dims(config, tp, rank);
  const int64_t slots = 64, channels = 3 * dims.kda_projection;
  std::vector<dec::KdaCache> caches;
  for (int layer = 0; layer < config.num_hidden_layers; ++layer) {
    if (config.served_kind(layer) != monotile::model::ServedKind::kWhole) continue;
    caches.push_back({"model.layers." + std::to_string(layer) + ".self_attn",
                      dec::TensorView::dense(monotile::model::Dtype::kBF16, {slots, q + 2, channels}, kNowhere),
                      dec::TensorView::dense(monotile::model::Dtype::kF32, {slots, dims.kda_heads, 128, 128}, kNowhere)});
  }
  if (absl::Status bound = decode.prepare_kv(caches); !bound.ok()) {
    std::fprintf(stderr, "executor_bench: %s\n", std::string(bound.message()).c_str());
    return 1;
  }
  const int requests = 4, width = requests * q;
  dec::SpecMetadata m{.spec_sequence_masks = true, .num_spec_decodes = requests, .uniform_spec_sequence_length = q,
                      .spec_state_indices = dec::TensorView::dense(monotile::model::Dtype::kI32, {requests, q}, kNowhere),
                      .num_accepted_tokens = dec::TensorView::dense(monotile::model::Dtype::kI32, {requests}, kNowhere),
                      .spec_query_start_loc = dec::TensorView::dense(monotile::model::Dtype::kI32, {requests + 1}, kNowhere)};
  const dec::AttnMetadata metadata{{decode.kda_prefix(), m}};
  const dec::StepInputs inputs{.width = width, .attn_metadata = &metadata, .kda_state = &caches.front().recurrent};
  constexpr int kSteps = 20000;
  int served = 0;
  start = std::chrono::steady_clock::now();
  for (int s = 0; s < kSteps; ++s) {
    absl::StatusOr<std::optional<dec::Step>> step = decode.plan(inputs);
    for (int layer = 0; layer < config.num_hidden_layers; ++layer) served += (*step)->layer(layer).has_value();
  }
  const double per_step = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kSteps;
  std::printf("k3 TP %d rank %d, q %d, widths up to 16: construction %.2f s (CPU device: programs built, none compiled)\n",
              tp, rank, q, construction);
  std::printf("plan + Step::layer over %d layers (%d served): %.3f us a step (mean over %d steps)\n",
              config.num_hidden_layers, served / kSteps, per_step * 1e6, kSteps);
  return 0;
}
