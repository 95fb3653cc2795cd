// The device a command runs on; see device_choice.h.
#include "tools/device_choice.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/discovery.h"
#include "support/check.h"

namespace monotile::tools {

int RankGpu::programs(int compute_units) const {
  return sharers > 1 ? std::max(1, compute_units / sharers) : 0;
}

RankGpu rank_gpu(int local_rank, int local_size, int gpus) {
  MT_CHECK(gpus >= 1 && local_rank >= 0 && local_rank < local_size);
  const int index = local_rank % gpus;
  // Local ranks index, index + gpus, ...: the full rounds, and one more where the last is partial.
  const int sharers = local_size / gpus + (index < local_size % gpus ? 1 : 0);
  return {.index = index, .sharers = sharers};
}

absl::StatusOr<RankGpu> rank_gpu_at(int gpu_index, int local_size, int gpus) {
  if (gpu_index < 0 || gpu_index >= gpus) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--gpu-index ", gpu_index, ": expected 0 to ", gpus - 1, ", an index among this machine's ",
        gpus, gpus == 1 ? " GPU" : " GPUs",
        "; hint: `monotile devices` lists them, and without --gpu-index each rank takes GPU "
        "(local rank % GPUs)"));
  }
  return RankGpu{.index = gpu_index, .sharers = local_size};
}

std::optional<std::string> gpu_index_misuse(std::optional<int> gpu_index,
                                            const std::optional<std::string>& device) {
  if (gpu_index && *gpu_index < 0) {
    return absl::StrCat("--gpu-index ", *gpu_index,
                        ": expected a GPU's index, 0 or more; hint: `monotile devices` lists this "
                        "machine's GPUs");
  }
  if (gpu_index && device == "cpu") {
    return absl::StrCat("--gpu-index ", *gpu_index,
                        " with --device cpu: expected --device gpu or no --device; hint: the CPU "
                        "interpreter is one device, leave --gpu-index out");
  }
  return std::nullopt;
}

absl::StatusOr<PickedDevice> pick_rank_device(const std::optional<std::string>& wanted,
                                              int local_rank, int local_size,
                                              std::optional<int> gpu_index) {
  if (wanted && *wanted != "cpu" && *wanted != "gpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("--device ", *wanted,
                     ": expected cpu or gpu; hint: leave it out to use a GPU when there is one"));
  }
  runtime::Discovery found = runtime::discover_devices();
  std::unique_ptr<runtime::Device> cpu;
  // The first GPU's vendor (NVIDIA's come first) and its GPUs in driver order.
  std::vector<std::unique_ptr<runtime::Device>> gpus;
  for (std::unique_ptr<runtime::Device>& device : found.devices) {
    const dsl::Vendor vendor = device->info().vendor;
    if (vendor == dsl::Vendor::kCpu) {
      if (!cpu) cpu = std::move(device);
    } else if (gpus.empty() || gpus.front()->info().vendor == vendor) {
      gpus.push_back(std::move(device));
    }
  }
  // --gpu-index asks for a GPU as --device gpu does (decode_command refuses it with --device cpu).
  if (wanted == "cpu" || (!wanted && !gpu_index && gpus.empty()))
    return PickedDevice{.device = std::move(cpu), .gpu = {}, .gpus = 0};
  if (!gpus.empty()) {
    const int count = static_cast<int>(gpus.size());
    RankGpu gpu = rank_gpu(local_rank, local_size, count);
    if (gpu_index) {
      absl::StatusOr<RankGpu> chosen = rank_gpu_at(*gpu_index, local_size, count);
      if (!chosen.ok()) return chosen.status();
      gpu = *chosen;
    }
    return PickedDevice{
        .device = std::move(gpus[static_cast<size_t>(gpu.index)]), .gpu = gpu, .gpus = count};
  }
  std::vector<std::string> reasons;
  for (const runtime::MissingBackend& missing : found.missing) reasons.push_back(missing.reason);
  for (const std::string& skipped : found.skipped) reasons.push_back(skipped);
  const std::string asked =
      gpu_index ? absl::StrCat("--gpu-index ", *gpu_index) : std::string("--device gpu");
  return absl::NotFoundError(
      absl::StrCat(asked, ": no GPU device found (", absl::StrJoin(reasons, "; "),
                   "); hint: --device cpu runs the kernels on the CPU interpreter"));
}

}  // namespace monotile::tools
