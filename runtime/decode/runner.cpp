// The executor's launch state and its builds; see runner.h.
#include "runtime/decode/runner.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <optional>
#include <thread>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "jit/compile_all.h"
#include "jit/program_build.h"
#include "runtime/decode/step_begin.h"
#include "support/check.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {

using kernels::k3::K1Build;
using kernels::k3::K2Build;

Runner::Runner(Device& device, jit::Jit& jit, Group& group, DecodeConfig config, const model::ModelConfig& model,
               model::RankDims dims, ExecutorOptions options)
    : device_(&device),
      jit_(&jit),
      group_(&group),
      config_(config),
      model_(&model),
      dims_(dims),
      options_(std::move(options)) {}

absl::Status Runner::allocate(int programs, int64_t core_width) {
  MT_ASSIGN_OR_RETURN(LaunchState state, LaunchState::create(*device_, programs, "the layer kernels"));
  state_ = std::make_shared<LaunchState>(std::move(state));
  MT_ASSIGN_OR_RETURN(FailStop stop, FailStop::create(*device_, state_->health(), *group_, options_.check_every));
  fail_stop_ = std::make_unique<FailStop>(std::move(stop));
  MT_ASSIGN_OR_RETURN(Kernel bump, load_program(*device_, step_begin_program(), *jit_));
  step_begin_.emplace(std::move(bump));
  const size_t rows = static_cast<size_t>(config_.max_rows);
  const size_t hidden = static_cast<size_t>(model_->hidden_size);
  const size_t top_k = static_cast<size_t>(model_->num_experts_per_token);
  MT_ASSIGN_OR_RETURN(core_, device_->allocate(rows * static_cast<size_t>(core_width) * 2));
  for (DeviceBuffer& out : out_) {
    MT_ASSIGN_OR_RETURN(out, device_->allocate(rows * hidden * 2));
  }
  MT_ASSIGN_OR_RETURN(route_experts_, device_->allocate(rows * top_k * 4));
  MT_ASSIGN_OR_RETURN(route_weights_, device_->allocate(rows * top_k * 4));
  return absl::OkStatus();
}

namespace {

// Runs body(i) for i in [0, n) on up to one thread per core: building a program and lowering it
// take tens of milliseconds each, and an executor has a hundred or more of them.
void parallel_for(size_t n, const std::function<void(size_t)>& body) {
  const size_t threads = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) body(i);
    });
  }
  for (std::thread& thread : pool) thread.join();
}

}  // namespace

absl::Status Runner::load(const std::vector<K1Build>& k1s, const std::vector<K2Build>& k2s, ExecutorStats& stats) {
  // The builds not loaded yet, once each, as functions making their programs.
  std::vector<K1Build> new_k1;
  std::vector<K2Build> new_k2;
  std::vector<std::function<dsl::Program()>> makers;
  for (const K1Build& build : k1s) {
    if (k1_.contains(kernels::k3::k1_name(build))) continue;
    if (std::any_of(new_k1.begin(), new_k1.end(), [&](const K1Build& b) { return b == build; })) continue;
    new_k1.push_back(build);
    makers.push_back([build] { return kernels::k3::k1_program(build); });
  }
  for (const K2Build& build : k2s) {
    if (k2_.contains(kernels::k3::k2_name(build))) continue;
    if (std::any_of(new_k2.begin(), new_k2.end(), [&](const K2Build& b) { return b == build; })) continue;
    new_k2.push_back(build);
    makers.push_back([build] { return kernels::k3::k2_program(build); });
  }
  if (makers.empty()) return absl::OkStatus();

  // Built (and on a GPU lowered) in parallel; then compiled or found in the cache by compile_all.
  const bool cpu = device_->info().vendor == dsl::Vendor::kCpu;
  std::vector<std::optional<dsl::Program>> programs(makers.size());
  std::vector<absl::StatusOr<jit::ProgramBuild>> made(makers.size(), absl::UnknownError("not lowered"));
  parallel_for(makers.size(), [&](size_t i) {
    programs[i] = makers[i]();
    if (!cpu) made[i] = jit::make_build(*programs[i], device_->info().target);
  });
  std::vector<Kernel> kernels;
  if (cpu) {
    for (std::optional<dsl::Program>& program : programs) {
      MT_ASSIGN_OR_RETURN(Kernel kernel, load_program(*device_, std::move(*program), *jit_));
      kernels.push_back(std::move(kernel));
    }
  } else {
    std::vector<jit::Build> builds;
    std::vector<std::vector<dsl::lower::KernelParam>> params;
    for (absl::StatusOr<jit::ProgramBuild>& m : made) {
      if (!m.ok()) return m.status();
      builds.push_back(std::move(m->build));
      params.push_back(std::move(m->params));
    }
    jit::CompileAllResult compiled =
        jit::compile_all(*jit_, builds, {.jobs = options_.compile_jobs, .on_progress = options_.on_progress});
    stats.compiled += static_cast<int>(compiled.misses);
    for (size_t i = 0; i < builds.size(); ++i) {
      if (!compiled.results[i].ok()) return compiled.results[i].status();
      MT_ASSIGN_OR_RETURN(Kernel kernel, Kernel::load(*device_, *compiled.results[i], std::move(params[i])));
      kernels.push_back(std::move(kernel));
    }
  }
  size_t next = 0;
  for (const K1Build& build : new_k1) {
    MT_ASSIGN_OR_RETURN(K1Launch launch, K1Launch::create(*device_, build, state_));
    k1_.emplace(kernels::k3::k1_name(build), K1Entry{std::move(kernels[next++]), std::move(launch)});
  }
  for (const K2Build& build : new_k2) {
    MT_ASSIGN_OR_RETURN(K2Launch launch, K2Launch::create(*device_, build, state_));
    k2_.emplace(kernels::k3::k2_name(build), K2Entry{std::move(kernels[next++]), std::move(launch)});
  }
  stats.builds += static_cast<int>(makers.size());
  return absl::OkStatus();
}

void Runner::resolve() {
  for (auto& [layer, k] : layers) {
    for (const auto& [key, build] : k.k1_builds) {
      auto found = k1_.find(kernels::k3::k1_name(build));
      MT_CHECK(found != k1_.end(), "a served layer's K1 build was not loaded");
      k.k1_entries[key] = &found->second;
    }
    for (const auto& [width, build] : k.k2_builds) {
      auto found = k2_.find(kernels::k3::k2_name(build));
      MT_CHECK(found != k2_.end(), "a served layer's K2 build was not loaded");
      k.k2_entries[width] = &found->second;
    }
  }
}

}  // namespace monotile::runtime::decode
