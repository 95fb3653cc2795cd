// The executor's launch state and its builds; see runner.h.
#include "runtime/decode/runner.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "jit/compile_programs.h"
#include "runtime/decode/step_begin.h"
#include "support/check.h"
#include "support/parallel_for.h"
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
  if (peers_) {
    std::vector<DevicePtr> addresses;
    for (int r = 0; r < peers_->size(); ++r) addresses.push_back(peers_->address(r));
    state_->set_peers(std::move(addresses));
  }
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

// A launch's key: its build's name and the launch values the name leaves out.
std::string launch_key(const K1Build& b) {
  return absl::StrCat(kernels::k3::k1_name(b), " nb", b.nblocks, " w", b.write_index);
}
std::string launch_key(const K2Build& b) {
  return absl::StrCat(kernels::k3::k2_name(b), " nb", b.nblocks, " x", b.reset ? 1 : 0);
}

}  // namespace

absl::Status Runner::load(const std::vector<K1Build>& k1s, const std::vector<K2Build>& k2s, ExecutorStats& stats,
                          Stream* stream) {
  // The builds without a launch yet, once each; the names without a kernel yet, once each, as
  // functions making their programs (every build of a name makes the same program).
  std::vector<K1Build> new_k1;
  std::vector<K2Build> new_k2;
  std::vector<std::string> names;
  std::vector<std::function<dsl::Program()>> makers;
  auto need_kernel = [&](const std::string& name, std::function<dsl::Program()> make) {
    if (kernels_.contains(name) || std::find(names.begin(), names.end(), name) != names.end()) return;
    names.push_back(name);
    makers.push_back(std::move(make));
  };
  for (const K1Build& build : k1s) {
    if (k1_.contains(launch_key(build))) continue;
    if (std::any_of(new_k1.begin(), new_k1.end(), [&](const K1Build& b) { return b == build; })) continue;
    new_k1.push_back(build);
    need_kernel(kernels::k3::k1_name(build), [build] { return kernels::k3::k1_program(build); });
  }
  for (const K2Build& build : k2s) {
    if (k2_.contains(launch_key(build))) continue;
    if (std::any_of(new_k2.begin(), new_k2.end(), [&](const K2Build& b) { return b == build; })) continue;
    new_k2.push_back(build);
    need_kernel(kernels::k3::k2_name(build), [build] { return kernels::k3::k2_program(build); });
  }
  if (new_k1.empty() && new_k2.empty()) return absl::OkStatus();

  // On the CPU device the interpreter runs the programs themselves; on a GPU compile_programs finds
  // each program's code object by direct mode, and lowers only those it does not find. Loading and
  // the launches' scratch are spread over every core too (a Device may be called from several
  // threads): a hundred module loads and allocations in a row are a good part of a warm start.
  const size_t n = makers.size();
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::optional<absl::StatusOr<Kernel>>> kernels(n);
  std::chrono::steady_clock::time_point found;
  if (device_->info().vendor == dsl::Vendor::kCpu) {
    std::vector<std::optional<dsl::Program>> programs(n);
    parallel_for(n, [&](size_t i) { programs[i] = makers[i](); });
    found = std::chrono::steady_clock::now();
    parallel_for(n, [&](size_t i) { kernels[i] = load_program(*device_, std::move(*programs[i]), *jit_); });
  } else {
    jit::CompilePrograms how;
    how.compile = {.jobs = options_.compile_jobs, .on_progress = options_.on_progress};
    jit::CompiledPrograms compiled = jit::compile_programs(*jit_, makers, device_->info().target, how);
    found = std::chrono::steady_clock::now();
    stats.compiled += static_cast<int>(compiled.compiled);
    stats.lowered += static_cast<int>(compiled.lowered);
    parallel_for(n, [&](size_t i) {
      absl::StatusOr<jit::CompiledProgram>& program = compiled.results[i];
      kernels[i] = program.ok() ? Kernel::load(*device_, program->compiled, std::move(program->params))
                                : absl::StatusOr<Kernel>(program.status());
    });
  }
  stats.find_seconds += std::chrono::duration<double>(found - start).count();
  for (const std::optional<absl::StatusOr<Kernel>>& kernel : kernels) {
    if (!kernel->ok()) return kernel->status();  // the first failure in build order
  }
  for (size_t i = 0; i < n; ++i) kernels_.emplace(names[i], std::move(**kernels[i]));
  std::vector<std::optional<absl::StatusOr<K1Launch>>> k1_launches(new_k1.size());
  std::vector<std::optional<absl::StatusOr<K2Launch>>> k2_launches(new_k2.size());
  // A Stream is used by one thread at a time: with the host's stream, the launches are made in order.
  auto make_launch = [&](size_t i) {
    if (i < new_k1.size()) {
      const Kernel& kernel = kernels_.at(kernels::k3::k1_name(new_k1[i]));
      k1_launches[i] = K1Launch::create(*device_, new_k1[i], state_, &kernel, stream);
    } else {
      const K2Build& build = new_k2[i - new_k1.size()];
      k2_launches[i - new_k1.size()] =
          K2Launch::create(*device_, build, state_, &kernels_.at(kernels::k3::k2_name(build)), stream);
    }
  };
  const size_t launches = new_k1.size() + new_k2.size();
  if (stream != nullptr) {
    for (size_t i = 0; i < launches; ++i) make_launch(i);
  } else {
    parallel_for(launches, make_launch);
  }
  for (size_t i = 0; i < new_k1.size(); ++i) {
    if (!k1_launches[i]->ok()) return k1_launches[i]->status();
    const Kernel* kernel = &kernels_.at(kernels::k3::k1_name(new_k1[i]));
    k1_.emplace(launch_key(new_k1[i]), K1Entry{kernel, std::move(**k1_launches[i])});
  }
  for (size_t i = 0; i < new_k2.size(); ++i) {
    if (!k2_launches[i]->ok()) return k2_launches[i]->status();
    const Kernel* kernel = &kernels_.at(kernels::k3::k2_name(new_k2[i]));
    k2_.emplace(launch_key(new_k2[i]), K2Entry{kernel, std::move(**k2_launches[i])});
  }
  stats.builds += static_cast<int>(n);
  stats.load_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - found).count();
  return absl::OkStatus();
}

void Runner::resolve() {
  for (auto& [layer, k] : layers) {
    for (const auto& [key, build] : k.k1_builds) {
      auto found = k1_.find(launch_key(build));
      MT_CHECK(found != k1_.end(), "a served layer's K1 build was not loaded");
      k.k1_entries[key] = &found->second;
    }
    for (const auto& [width, build] : k.k2_builds) {
      auto found = k2_.find(launch_key(build));
      MT_CHECK(found != k2_.end(), "a served layer's K2 build was not loaded");
      k.k2_entries[width] = &found->second;
    }
  }
}

}  // namespace monotile::runtime::decode
