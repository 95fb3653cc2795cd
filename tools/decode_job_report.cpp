// `monotile decode`'s report: the outputs' digests, --graph's timing replays and the per-layer
// table against the floors; see decode_job.h.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "support/check.h"
#include "support/status_macros.h"
#include "tools/decode_job.h"
#include "tools/decode_layer_bytes.h"

namespace monotile::tools {

std::string DecodeJob::outputs_path() const {
  return o_.mpi || o_.fork ? absl::StrCat(*o_.outputs, ".rank", o_.rank) : *o_.outputs;
}

absl::StatusOr<std::FILE*> DecodeJob::open_outputs() const {
  const std::string path = outputs_path();
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--outputs ", path, ": cannot write: ", std::strerror(errno),
                     "; hint: a writable file in an existing folder"));
  }
  return file;
}

// The bytes of `ranges` on the device, in order, once the stream is done.
absl::StatusOr<std::vector<uint8_t>> DecodeJob::read_ranges(
    const std::vector<std::pair<runtime::DevicePtr, size_t>>& ranges) {
  MT_RETURN_IF_ERROR(device_->synchronize(stream_));
  std::vector<uint8_t> bytes;
  for (const auto& [address, size] : ranges) {
    bytes.resize(bytes.size() + size);
    MT_RETURN_IF_ERROR(device_->copy_to_host(bytes.data() + bytes.size() - size, address, size));
  }
  return bytes;
}

// FNV-1a over device bytes: eager and --graph runs of one seed print the same digests, and so do
// the ranks of an exchanging run.
absl::StatusOr<uint64_t> DecodeJob::digest(
    const std::vector<std::pair<runtime::DevicePtr, size_t>>& ranges) {
  MT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_ranges(ranges));
  uint64_t hash = 1469598103934665603ull;
  for (uint8_t b : bytes) hash = (hash ^ b) * 1099511628211ull;
  return hash;
}

absl::Status DecodeJob::print_step_digest() {
  const size_t th = static_cast<size_t>(o_.requests * o_.q * config_.hidden_size) * 2;
  const std::vector<std::pair<runtime::DevicePtr, size_t>> outputs = {
      {step_.prefix.address(), th},
      {step_.blocks.address(), th * static_cast<size_t>(config_.block_count())},
      {step_out_, th}};
  MT_ASSIGN_OR_RETURN(uint64_t hash, digest(outputs));
  // Every rank prints its own line: an exchanging run's ranks must print the same digest.
  std::printf("  output digest (prefix, blocks, the last layer's output)%s: %016llx\n",
              o_.tp > 1 ? absl::StrCat(", TP ", o_.tp, " rank ", o_.rank).c_str() : "",
              static_cast<unsigned long long>(hash));
  if (!o_.outputs) return absl::OkStatus();
  MT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_ranges(outputs));
  MT_ASSIGN_OR_RETURN(std::FILE * file, open_outputs());
  const std::string path = outputs_path();
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  if (std::fclose(file) != 0 || !written) {
    return absl::InternalError(absl::StrCat("--outputs ", path, ": writing ", bytes.size(),
                                            " bytes failed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status DecodeJob::print_cache_digest() {
  std::vector<std::pair<runtime::DevicePtr, size_t>> ranges;
  for (const auto& [layer, c] : caches_) {
    ranges.emplace_back(c.conv.address(),
                        static_cast<size_t>(c.slots * c.state_len * c.channels) * 2);
    ranges.emplace_back(c.state.address(), static_cast<size_t>(c.state_elements) * 4);
  }
  MT_ASSIGN_OR_RETURN(uint64_t hash, digest(ranges));
  std::printf("KDA caches digest after the steps: %016llx\n",
              static_cast<unsigned long long>(hash));
  return absl::OkStatus();
}

// --graph's times: the step recorded twice more without --check's host work, once whole and once
// as a graph per layer, each replayed `runs` times; a part's time is the stream's time between
// events around it. The step's inputs are those of the last step (the caches move on; no check
// follows).
absl::Status DecodeJob::time_layers() {
  const int runs = device_->info().vendor == dsl::Vendor::kCpu ? 1 : 20;
  MT_RETURN_IF_ERROR(write_step(0, false));
  MT_ASSIGN_OR_RETURN(std::optional<dec::Step> planned, plan());
  MT_CHECK(planned.has_value(), "plan accepted this width's spec-verify steps before");
  StepRecorder whole(*device_, stream_, true), by_layer(*device_, stream_, true);
  MT_RETURN_IF_ERROR(
      enqueue_layers(whole, *planned, {.check = false, .cut = false, .timed = false}));
  MT_ASSIGN_OR_RETURN(StepGraph whole_graph, whole.finish());
  MT_RETURN_IF_ERROR(
      enqueue_layers(by_layer, *planned, {.check = false, .cut = true, .timed = false}));
  MT_ASSIGN_OR_RETURN(StepGraph layer_graph, by_layer.finish());
  for (int run = 0; run < runs; ++run) {
    std::map<int, double> ms;
    MT_RETURN_IF_ERROR(whole_graph.replay(*device_, stream_, &ms));
    double total = 0;
    for (const auto& [layer, t] : ms) total += t;
    step_ms_.push_back(total);
    MT_RETURN_IF_ERROR(layer_graph.replay(*device_, stream_, &layer_ms_));
  }
  for (auto& [layer, t] : layer_ms_) t /= runs;
  MT_RETURN_IF_ERROR(device_->synchronize(stream_));
  return decode_->check_health();
}

void DecodeJob::print_table() {
  const bool gpu = bandwidth_.has_value();
  const StepShape shape{.requests = o_.requests,
                        .q = o_.q,
                        .conv_state_len = state_len_,
                        .mla_context = mla_context_.empty() ? 0 : mla_context_[0]};
  std::printf("\nlayer  %-64s %10s%s%s\n", "run by", o_.graph ? "ms" : "mean ms",
              gpu ? "        MB   floor ms   ratio" : "", o_.check ? "  worst err/RMS  check" : "");
  double kernel_ms = 0, host_ms = 0, floor_ms = 0, bytes_total = 0;
  for (const auto& [layer, row] : rows_) {
    const double ms = o_.graph ? layer_ms_[layer] : row.runs ? 1e3 * row.seconds / row.runs : 0;
    (row.standin ? host_ms : kernel_ms) += ms;
    std::printf("%5d  %-64s %10.3f", layer, row.kind.c_str(), ms);
    if (gpu) {
      const LayerBytes bytes =
          layer_bytes(config_, plan_.layers.at(static_cast<size_t>(layer)), dims_, shape);
      const double floor = 1e3 * bytes.total() / *bandwidth_;
      floor_ms += floor;
      bytes_total += bytes.total();
      std::printf("  %8.1f  %9.3f  %6.2f", bytes.total() / 1e6, floor, ms / floor);
    }
    if (o_.check && row.checked)
      std::printf("  %13.5f  %s", row.worst_rms, row.passed ? "pass" : "FAIL");
    std::printf("\n");
  }
  std::printf(
      "a step: %.1f ms in served layers, %.1f ms in the host's stand-ins (%s; stand-ins: %s)\n",
      kernel_ms, host_ms,
      gpu ? (o_.graph
                 ? "GPU kernels, each layer a graph replayed alone, mean of 20"
                 : "GPU kernels, each layer timed by events around it, the stream idle before it")
          : "the CPU interpreter: times are not the GPU's",
      host_->kind() == StandinKind::kKernels ? "DSL kernels on the device"
                                             : "the reference on the CPU");
  if (o_.graph && !step_ms_.empty()) {
    std::vector<double> sorted = step_ms_;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    if (gpu) {
      std::printf(
          "the whole step replayed: %.3f ms (median of %zu); the sum of the layer floors: %.3f ms "
          "(%.1f MB at the copy's %.0f GB/s): %.2fx the floor\n",
          median, sorted.size(), floor_ms, bytes_total / 1e6, *bandwidth_ / 1e9, median / floor_ms);
    } else {
      std::printf(
          "the whole step replayed: %.3f ms (the CPU interpreter: no floors; they are the GPU's, "
          "from its copy bandwidth)\n",
          median);
    }
  }
  if (gpu) {
    std::printf(
        "floors: bytes a layer must move (its weights, the routed experts' for the distinct "
        "experts uniform routing would choose, its KV state read and written, the activations) at "
        "the copy bandwidth measured in this run (%.0f GB/s, a 1 GiB device-to-device copy)\n",
        *bandwidth_ / 1e9);
  }
  if (o_.check) {
    std::printf(
        "%s\n",
        checks_passed_
            ? "every served layer passes its check against the float64 reference"
            : "a checked layer FAILED its check against the float64 reference (see its row)");
    if (host_->kind() == StandinKind::kKernels) {
      std::printf(
          "(the host's stand-ins, DSL kernels, are checked in their rows too: layer 0 whole, an "
          "MLA layer's core as \"mla core\")\n");
    }
    if (aliased_) {
      std::printf(
          "(the reference reads the weights the device made: each kind's layer copied back "
          "once)\n");
    }
  }
}

}  // namespace monotile::tools
