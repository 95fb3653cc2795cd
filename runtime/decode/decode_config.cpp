// The deployment check: default-deny, every reason collected (seed_source.md 1.2).
#include "runtime/decode/decode_config.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "model/kernel_limits.h"
#include "model/str_cat.h"
#include "model/weight_reasons.h"
#include "runtime/decode/tp_reasons.h"
#include "support/log.h"

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

// The seed's parallelism refusals beyond TP and PP.
void parallel_reasons(const DecodeOptions& o, std::vector<std::string>& reasons) {
  if (o.data_parallel_size != 1) {
    reasons.push_back(
        str_cat("data parallelism (data_parallel_size ", o.data_parallel_size, "): expected 1"));
  }
  if (o.enable_expert_parallel) {
    reasons.push_back(
        "expert parallelism (enable_expert_parallel): the kernels read every "
        "expert's TP slice on every rank");
  }
  if (o.enable_eplb)
    reasons.push_back("EPLB (enable_eplb): the kernels read the loaded experts in place");
  const int dcp = o.decode_context_parallel_size;
  if (dcp != 1 && dcp != o.tensor_parallel_size) {
    reasons.push_back(
        str_cat("decode context parallelism other than 1 or TP "
                "(decode_context_parallel_size ",
                dcp, ", TP ", o.tensor_parallel_size, ")"));
  }
  if (o.prefill_context_parallel_size != 1) {
    reasons.push_back(str_cat("prefill context parallelism (prefill_context_parallel_size ",
                              o.prefill_context_parallel_size, "): expected 1"));
  }
  if (o.use_ubatching) {
    reasons.push_back(
        "DBO (dual-batch overlap, use_ubatching): the kernels read one batch's "
        "attention metadata a step");
  }
}

// Features that hook into the layers or change the weights the kernels read in place.
void feature_reasons(const DecodeOptions& o, std::vector<std::string>& reasons) {
  if (o.lora) reasons.push_back("LoRA (lora_config): the kernels apply no adapters");
  if (const std::optional<KvTransferConfig>& kv = o.kv_transfer_config;
      kv && (kv->kv_connector != "MoRIIOConnector" || kv->kv_connector_module_path ||
             kv->kv_role != "kv_consumer")) {
    reasons.push_back(str_cat(
        "KV transfer connectors other than a MoRIIO consumer (kv_connector \"", kv->kv_connector,
        "\", kv_role \"", kv->kv_role, "\"",
        kv->kv_connector_module_path
            ? str_cat(", kv_connector_module_path \"", *kv->kv_connector_module_path, "\"")
            : std::string(),
        "): MoRIIO consumers finish their loads before execution, other connectors hook into the "
        "layers"));
  }
  if (o.enable_return_routed_experts) {
    reasons.push_back(
        "routed-expert capture (enable_return_routed_experts): the kernels return "
        "no routes");
  }
  if (o.enable_sleep_mode) {
    reasons.push_back(
        "sleep mode (enable_sleep_mode): the kernels read the loaded weights in place");
  }
  if (o.cpu_offload_gb > 0 || o.offload_group_size > 0) {
    reasons.push_back(str_cat("CPU weight offload (cpu_offload_gb ", o.cpu_offload_gb,
                              ", offload_group_size ", o.offload_group_size,
                              "): the kernels read the loaded weights in place"));
  }
  if (o.weight_transfer) {
    reasons.push_back(
        "weight updates (weight_transfer_config): the kernels read the loaded weights "
        "in place, and construction checked them once");
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
  if (tp > 1 && !o.other_ranks_stood_in && !o.checking_exchanges) {
    reasons.push_back(tp_deployment_reason(tp));
  } else if (std::find(std::begin(kKernelTpSizes), std::end(kKernelTpSizes), tp) ==
             std::end(kKernelTpSizes)) {
    reasons.push_back(
        str_cat("TP ", tp, ": the kernels are built for TP ",
                absl::StrJoin(std::begin(kKernelTpSizes), std::end(kKernelTpSizes) - 1, ", "),
                " or ", *(std::end(kKernelTpSizes) - 1)));
  }
  if (o.pipeline_parallel_size != 1) {
    reasons.push_back(str_cat("pipeline parallelism (pipeline_parallel_size ",
                              o.pipeline_parallel_size, "): expected 1"));
  }
  parallel_reasons(o, reasons);
  feature_reasons(o, reasons);
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
  if (o.num_speculative_tokens.has_value() && o.enable_adaptive_verification) {
    reasons.push_back(
        "adaptive verification (enable_adaptive_verification): the kernels verify "
        "every speculative token of a uniform step");
  }
  if (o.num_speculative_tokens.has_value() && o.dynamic_speculative_decoding) {
    reasons.push_back("dynamic speculative decoding: the kernels are built for one q");
  }
  if (o.conv_state_dtype != model::Dtype::kBF16 || o.recurrent_state_dtype != model::Dtype::kF32) {
    reasons.push_back(str_cat("KDA cache dtypes conv ", model::dtype_name(o.conv_state_dtype),
                              ", recurrent ", model::dtype_name(o.recurrent_state_dtype),
                              ": expected conv BF16, recurrent F32"));
  }
  if (o.use_replayssm || o.use_kda_recoverssm) {
    reasons.push_back(str_cat("ReplaySSM / RecoverSSM (use_replayssm ", o.use_replayssm,
                              ", use_kda_recoverssm ", o.use_kda_recoverssm,
                              "): K1 keeps no such records"));
  }
  if (!o.use_v2_model_runner) {
    reasons.push_back(
        "the V1 model runner (set VLLM_USE_V2_MODEL_RUNNER=1): the executor is "
        "built and bound by Model Runner V2's model-state hooks");
  }
  if (o.stock_torch_compile) {
    reasons.push_back(
        "torch.compile (compilation mode STOCK_TORCH_COMPILE): plan and the layer "
        "kernels run in forward, which a compiled forward would trace");
  }
  model_reasons(o, reasons);
  device_reasons(o, reasons);
  return reasons;
}

}  // namespace

DeviceFacts device_facts(const DeviceInfo& info, bool partitioned) {
  return {info.compute_units, partitioned, info.vendor == dsl::Vendor::kCpu};
}

std::vector<std::string> deployment_warnings(const DecodeOptions& options) {
  // The decode mode of FULL_DECODE_ONLY and FULL_AND_PIECEWISE is FULL; with no graphs, nothing.
  if (options.cudagraph_mode != CudaGraphMode::kPiecewise) return {};
  return {
      "the specialized decode: PIECEWISE-only CUDA graphs capture every decode step as stock "
      "(cudagraph_mode PIECEWISE); use FULL decode graphs (FULL, FULL_DECODE_ONLY or "
      "FULL_AND_PIECEWISE)"};
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
  for (const std::string& warning : deployment_warnings(options)) log_warning(warning);
  return DecodeConfig{*options.num_speculative_tokens + 1, options.max_rows};
}

}  // namespace monotile::runtime::decode
