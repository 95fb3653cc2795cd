// The executor's host costs at K3's real shapes (TP 8, rank 0, q 4, every width up to 16), on the
// CPU device with views that are never read (plan and Step::layer touch no tensor):
//   - construction: weight checks, every layer's builds, the programs loaded (with --gpu, on the
//     first GPU: every build found or compiled through the kernel cache and loaded);
//   - plan + Step::layer for every decoder layer, per step (the goal: under 2 us for 92 layers);
//   - on the CPU device, plan and every launch of a step, the launches counted and not run: the
//     host's whole cost of enqueueing a step, less the driver's launch calls;
//   - with --warm-target=TARGET (sm_90a), a GPU executor's build work over a warm cache, which the
//     CPU device skips: every build's program made and its code object found, by direct mode or by
//     lowering it (loading the code objects, which needs the GPU, is not included).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "jit/compile_programs.h"
#include "jit/test_support.h"
#include "model/config.h"
#include "model/shard_plan.h"
#include "runtime/decode/executor_builds.h"
#include "runtime/decode/launch_counting_device.h"
#include "runtime/decode/specialized_decode.h"
#include "runtime/device_cpu.h"
#include "runtime/discovery.h"
#include "runtime/interpreter_module.h"

namespace dec = monotile::runtime::decode;
namespace jit = monotile::jit;
using monotile::runtime::ProgramCatalog;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A temporary cache made warm for `target` as a GPU machine's would be (every build's entry), then
// three starts over it: without direct mode (every build lowered to find its key), the first start
// with it (lowering, writing direct entries), and a warm start.
int warm_build_work(const monotile::model::ModelConfig& config, const monotile::model::RankDims& dims, int q,
                    const std::string& target_name) {
  absl::StatusOr<monotile::dsl::Target> target = monotile::dsl::Target::parse(target_name);
  if (!target.ok()) {
    std::fprintf(stderr, "executor_bench: --warm-target: %s\n", std::string(target.status().message()).c_str());
    return 2;
  }
  absl::StatusOr<std::vector<dec::LayerBuilds>> layers =
      dec::executor_builds(config, dims, 0, config.num_hidden_layers, {.q = q, .max_rows = 16}, *target);
  if (!layers.ok()) {
    std::fprintf(stderr, "executor_bench: %s\n", std::string(layers.status().message()).c_str());
    return 1;
  }
  const std::vector<std::function<monotile::dsl::Program()>> programs = dec::executor_programs(*layers);
  jit::testing::TempDir dir;
  jit::Jit jit(jit::testing::config_in(dir.path()));
  absl::StatusOr<std::vector<jit::Build>> builds = dec::lowered_builds(*layers, *target);
  if (!builds.ok()) {
    std::fprintf(stderr, "executor_bench: %s\n", std::string(builds.status().message()).c_str());
    return 1;
  }
  jit::testing::pretend_compiled(jit, *target, *builds);
  auto start_over = [&](const char* what, const jit::CompilePrograms& options) {
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();
    jit::CompiledPrograms started = jit::compile_programs(jit, programs, *target, options);
    const double seconds = seconds_since(start);
    const double cpu_seconds = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    size_t failed = 0;
    for (const auto& result : started.results) failed += !result.ok();
    std::printf("%zu builds for %s over a warm cache, %s: %.2f s (%.2f s of CPU time; %zu by direct mode, %zu "
                "lowered, %zu compiled, %zu failed)\n",
                programs.size(), target_name.c_str(), what, seconds, cpu_seconds, started.direct, started.lowered,
                started.compiled, failed);
  };
  jit::CompilePrograms direct_off;
  direct_off.lowering_identity = std::nullopt;
  start_over("direct mode off (each build lowered to find its key)", direct_off);
  start_over("first start with direct mode (lowered, direct entries written)", {});
  start_over("direct mode warm", {});
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string warm_target;
  bool on_gpu = false;
  for (int i = 1; i < argc; ++i) {
    constexpr std::string_view kWarmTarget = "--warm-target=";
    if (std::string_view(argv[i]).starts_with(kWarmTarget)) {
      warm_target = std::string(std::string_view(argv[i]).substr(kWarmTarget.size()));
    } else if (std::string_view(argv[i]) == "--gpu") {
      on_gpu = true;
    } else {
      std::fprintf(stderr, "executor_bench: unknown argument \"%s\"; usage: executor_bench [--gpu] [--warm-target=sm_90a]\n", argv[i]);
      return 2;
    }
  }
  const monotile::model::ModelConfig config = *monotile::model::load_config("k3");
  const int tp = 8, rank = 0, q = 4;
  // The rank's plan alone, as the constructor's weight check makes it again (best of 3).
  double plan_seconds = 1e9;
  for (int repeat = 0; repeat < 3; ++repeat) {
    auto plan_start = std::chrono::steady_clock::now();
    (void)*monotile::model::plan_rank(config, tp, rank);
    plan_seconds = std::min(plan_seconds, seconds_since(plan_start));
  }
  std::printf("plan_rank (K3 TP %d rank %d): %.3f s\n", tp, rank, plan_seconds);
  const monotile::model::RankPlan plan = *monotile::model::plan_rank(config, tp, rank);
  // Views with the plan's shapes at one address no one reads.
  constexpr uint64_t kNowhere = 0x1000;
  dec::Backbone backbone{.config = &config, .tp = tp, .rank = rank, .start_layer = 0,
                         .end_layer = config.num_hidden_layers, .weights = {},
                         .experts_layout = std::string(dec::kCheckpointExpertsLayout)};
  for (const monotile::model::LayerPlan& layer : plan.layers) {
    if (layer.layer < 0) continue;
    for (const monotile::model::RankTensor& t : layer.tensors) {
      backbone.weights[layer.layer][t.name] = dec::TensorView::dense(t.dtype, t.shape, kNowhere);
    }
  }
  std::unique_ptr<monotile::runtime::Device> device;
  if (on_gpu) {
    // The first GPU: construction there lowers or finds, compiles or loads from the cache, and
    // loads every build's code object (run twice: the second over a warm cache).
    monotile::runtime::Discovery found = monotile::runtime::discover_devices();
    for (std::unique_ptr<monotile::runtime::Device>& candidate : found.devices) {
      if (candidate->info().vendor != monotile::dsl::Vendor::kCpu) {
        device = std::move(candidate);
        break;
      }
    }
    if (!device) {
      std::fprintf(stderr, "executor_bench: --gpu: %s\n", monotile::runtime::no_gpu_reason(found).c_str());
      return 1;
    }
  } else {
    // The CPU device with launches counted and not run, so that a step's launches can be timed.
    device = std::make_unique<dec::LaunchCountingDevice>(
        monotile::runtime::make_cpu_device(monotile::runtime::interpreter_loader(ProgramCatalog::process())));
  }
  std::unique_ptr<dec::Group> group = dec::make_single_process_group();
  auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  absl::StatusOr<std::unique_ptr<dec::SpecializedDecode>> made =
      dec::SpecializedDecode::create(backbone, {.q = q, .max_rows = 16}, *group, *device,
                                     monotile::jit::Jit::process_default(),
                                     {.on_progress = nullptr,
                                      .log = [](const std::string& l) { std::printf("%s\n", l.c_str()); },
                                      .other_ranks_stood_in = true});  // one K3 rank of TP 8, timed alone
  if (!made.ok()) {
    std::fprintf(stderr, "executor_bench: %s\n", std::string(made.status().message()).c_str());
    return 1;
  }
  dec::SpecializedDecode& decode = **made;
  const double construction = seconds_since(start);
  const double construction_cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;

  const monotile::model::RankDims dims = *monotile::model::rank_dims(config, tp, rank);
  const int64_t slots = 64, channels = 3 * dims.kda_projection;
  std::vector<dec::KdaCache> caches;
  for (int layer = 0; layer < config.num_hidden_layers; ++layer) {
    if (config.served_kind(layer) != monotile::model::ServedKind::kWhole) continue;
    caches.push_back({decode.attention_name(layer),
                      dec::TensorView::dense(monotile::model::Dtype::kBF16, {slots, q + 2, channels}, kNowhere),
                      dec::TensorView::dense(monotile::model::Dtype::kF32, {slots, dims.kda_heads, 128, 128}, kNowhere)});
  }
  monotile::runtime::Stream stream = *device->create_stream();
  if (absl::Status bound = decode.prepare_kv(caches, stream); !bound.ok()) {
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
  std::printf("k3 TP %d rank %d, q %d, widths up to 16: construction %.2f s (%.2f s of CPU time; %s)\n", tp, rank,
              q, construction, construction_cpu,
              on_gpu ? device->info().name.c_str() : "CPU device: programs built, none compiled");
  std::printf("plan + Step::layer over %d layers (%d served): %.3f us a step (mean over %d steps)\n",
              config.num_hidden_layers, served / kSteps, per_step * 1e6, kSteps);
  if (!on_gpu) {
    // The whole host path of a step: plan, then every served layer's launches (the epoch bump, K1
    // and K2, or K2 after the host's attention), enqueued on a device that counts them.
    auto& counter = static_cast<dec::LaunchCountingDevice&>(*device);
    const int64_t h = config.hidden_size;
    dec::LayerIo io{.prefix = kNowhere, .blocks = kNowhere, .blocks_token_stride = config.block_count() * h,
                    .blocks_block_stride = h, .delta = kNowhere,
                    .attention = [](int, const dec::LayerIo&, monotile::runtime::Stream&)
                        -> absl::StatusOr<monotile::runtime::DevicePtr> { return kNowhere; }};
    constexpr int kLaunchSteps = 2000;
    const int launched = counter.launches();
    start = std::chrono::steady_clock::now();
    for (int s = 0; s < kLaunchSteps; ++s) {
      absl::StatusOr<std::optional<dec::Step>> step = decode.plan(inputs);
      io.delta = kNowhere;
      for (int layer = 0; layer < config.num_hidden_layers; ++layer) {
        std::optional<dec::LayerLaunch> launch = (*step)->layer(layer);
        if (!launch) continue;
        if (absl::Status status = (*launch)(io, stream); !status.ok()) {
          std::fprintf(stderr, "executor_bench: layer %d: %s\n", layer, std::string(status.message()).c_str());
          return 1;
        }
      }
    }
    const double per_launch_step =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kLaunchSteps;
    std::printf("plan + every launch of a step (%d launches, counted and not run): %.2f us a step (mean over %d steps)\n",
                (counter.launches() - launched) / kLaunchSteps, per_launch_step * 1e6, kLaunchSteps);
  }
  if (!warm_target.empty()) return warm_build_work(config, dims, q, warm_target);
  return 0;
}
