// The deployment check: default-deny, every reason collected (seed_source.md 1.2).
#include "runtime/decode/decode_config.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "model/kernel_limits.h"
#include "model/str_cat.h"
#include "model/weight_reasons.h"
#include "runtime/decode/tp_reasons.h"

namespace monotile::runtime::decode {
namespace {

using model::str_cat;

void model_reasons(const DecodeOptions& o, std::vector<std::string>& reasons) {
  if (o.model == nullptr) {
    reasons.push_back("no model config: expected the model's ModelConfig in DecodeOptions::model");
    return;
  }
  for (std::string& reason : model::config_reasons(*o.model)) {
    reasons.push_back(str_cat("model \"", o.model->name, "\" ", reason));
  }
  if (o.tensor_parallel_size < 1) return;
  absl::StatusOr<model::RankDims> dims = model::rank_dims(*o.model, o.tensor_parallel_size, 0);
  if (!dims.ok()) {
    reasons.push_back(str_cat("model \"", o.model->name, "\" does not split over TP ",
                              o.tensor_parallel_size, ": ", dims.status().message()));
  }
}

void device_reasons(const DecodeOptions& o, std::vector<std::string>& reasons) {
  if (!o.device.thread_per_program && o.device.compute_units < o.max_rows) {
    reasons.push_back(str_cat(
        "a device with ", o.device.compute_units, " compute units: expected at least ", o.max_rows,
        " (max_rows), every program of a launch resident on its own compute unit"));
  }
  if (o.device.partitioned) {
    reasons.push_back(
        "a partitioned GPU (MIG, CU masking or a shared device): the persistent kernels need every "
        "program resident at once and would deadlock; use a whole GPU");
  }
}

std::vector<std::string> unsupported(const DecodeOptions& o) {
  std::vector<std::string> reasons;
  int tp = o.tensor_parallel_size;
  if (tp > 1 && !o.other_ranks_stood_in) {
    reasons.push_back(tp_deployment_reason(tp));
  } else if (std::find(std::begin(kKernelTpSizes), std::end(kKernelTpSizes), tp) ==
             std::end(kKernelTpSizes)) {
    reasons.push_back(str_cat("TP ", tp, ": the kernels are built for TP ",
                              absl::StrJoin(kKernelTpSizes, " or ")));
  }
  if (o.pipeline_parallel_size != 1) {
    reasons.push_back(str_cat("pipeline parallelism (pipeline_parallel_size ",
                              o.pipeline_parallel_size, "): expected 1"));
  }
  if (o.max_rows != 8 && o.max_rows != 16) {
    reasons.push_back(str_cat("max_rows ", o.max_rows, ": expected 8 or 16"));
  }
  if (!o.num_speculative_tokens.has_value()) {
    reasons.push_back(
        "no speculative decoding: the kernels serve spec-verify steps; set num_speculative_tokens");
  } else if (*o.num_speculative_tokens < 1) {
    reasons.push_back(
        str_cat("num_speculative_tokens ", *o.num_speculative_tokens, ": expected at least 1"));
  } else if (*o.num_speculative_tokens + 1 > model::kKernelMaxQ) {
    // At any max_rows: K1 is written for q <= 8 (model/kernel_limits.h).
    reasons.push_back(str_cat("q ", *o.num_speculative_tokens + 1, " (num_speculative_tokens ",
                              *o.num_speculative_tokens, " + 1): K1 serves q up to ",
                              model::kKernelMaxQ, "; expected at most ", model::kKernelMaxQ - 1,
                              " speculative tokens"));
  } else if (*o.num_speculative_tokens + 1 > o.max_rows) {
    reasons.push_back(str_cat("q ", *o.num_speculative_tokens + 1, " (num_speculative_tokens ",
                              *o.num_speculative_tokens, " + 1) beyond max_rows ", o.max_rows,
                              ": expected at most ", o.max_rows - 1, " speculative tokens"));
  }
  if (o.conv_state_dtype != model::Dtype::kBF16 || o.recurrent_state_dtype != model::Dtype::kF32) {
    reasons.push_back(str_cat("KDA cache dtypes conv ", model::dtype_name(o.conv_state_dtype),
                              ", recurrent ", model::dtype_name(o.recurrent_state_dtype),
                              ": expected conv BF16, recurrent F32"));
  }
  model_reasons(o, reasons);
  device_reasons(o, reasons);
  return reasons;
}

}  // namespace

DeviceFacts device_facts(const DeviceInfo& info, bool partitioned) {
  return {info.compute_units, partitioned, info.vendor == dsl::Vendor::kCpu};
}

std::vector<int> DecodeConfig::widths() const {
  std::vector<int> widths;
  for (int width = q; q > 0 && width <= max_rows; width += q) widths.push_back(width);
  return widths;
}

absl::StatusOr<std::optional<DecodeConfig>> specialized_decode_config(
    const DecodeOptions& options) {
  if (options.decode_backend == kStockBackend) return std::nullopt;
  if (options.decode_backend != kSpecializedBackend) {
    return absl::InvalidArgumentError(str_cat("unknown decode_backend \"", options.decode_backend,
                                              "\": expected \"", kStockBackend, "\" or \"",
                                              kSpecializedBackend, "\""));
  }
  std::vector<std::string> reasons = unsupported(options);
  if (!reasons.empty()) {
    return absl::InvalidArgumentError(str_cat(
        "the specialized decode does not support this deployment: ", absl::StrJoin(reasons, "; "),
        " (decode_backend \"auto\" runs the stock decode)"));
  }
  return DecodeConfig{*options.num_speculative_tokens + 1, options.max_rows};
}

}  // namespace monotile::runtime::decode
