// DecodeConfig and the deployment check that runs before any weight exists (the seed's
// specialized_decode_config and unsupported): stock decode for "auto", otherwise every setting the
// kernels cannot serve, collected into one refusal.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/config.h"
#include "model/dtype.h"
#include "runtime/device_info.h"

namespace monotile::runtime::decode {

inline constexpr std::string_view kStockBackend = "auto";
inline constexpr std::string_view kSpecializedBackend = "latency_specialized";

// q rows per request and the launch widths: every multiple of q up to max_rows.
struct DecodeConfig {
  int q = 1;
  // 8 as the seed (a launch's rows fit one program's shared memory there) or 16, our kernels'
  // bound.
  int max_rows = 16;

  // q, 2q, ... <= max_rows, ascending. Every uniform verify step of at most max_rows rows is one
  // of them, so an eager step never pads.
  std::vector<int> widths() const;
  bool has_width(int width) const { return width > 0 && width % q == 0 && width <= max_rows; }
};

// What the resident-grid requirement needs of the device: every program of a launch resident at
// once, one program per compute unit. Filled by the host from runtime::DeviceInfo (compute_units)
// and what it knows of partitioning (MIG, CU masking, a shared device).
struct DeviceFacts {
  int compute_units = 0;  // SMs (NVIDIA), CUs (AMD)
  bool partitioned = false;
  // The CPU interpreter runs each program on its own host thread: every program is resident
  // whatever the core count, so the compute-unit count is not checked.
  bool thread_per_program = false;
};

// The facts of a discovered device; `partitioned` is what the host knows of MIG or CU masking
// (discovery does not see it).
DeviceFacts device_facts(const DeviceInfo& info, bool partitioned = false);

// vLLM's kv_transfer_config, the fields the check reads.
struct KvTransferConfig {
  std::string kv_connector;                             // "MoRIIOConnector", "NixlConnector", ...
  std::optional<std::string> kv_connector_module_path;  // a connector loaded from a module
  std::string kv_role;                                  // "kv_producer", "kv_consumer", "kv_both"
};

// vLLM's compilation_config.cudagraph_mode. Its decode mode is FULL for kFull, kFullDecodeOnly
// and kFullAndPiecewise, PIECEWISE for kPiecewise.
enum class CudaGraphMode { kNone, kPiecewise, kFull, kFullDecodeOnly, kFullAndPiecewise };

// The deployment as the host describes it; the names follow vLLM's settings (the config objects
// vLLM's check reads them from in the comments). The defaults are what the kernels serve.
struct DecodeOptions {
  std::string decode_backend = std::string(kStockBackend);
  // parallel_config
  int tensor_parallel_size = 1;
  int pipeline_parallel_size = 1;
  int data_parallel_size = 1;
  bool enable_expert_parallel = false;
  bool enable_eplb = false;
  int decode_context_parallel_size = 1;  // 1 or the TP size
  int prefill_context_parallel_size = 1;
  bool use_ubatching = false;  // dual-batch overlap (DBO)
  // Features that hook into the layers or replace the weights the kernels read in place.
  bool lora = false;                                                  // lora_config set
  std::optional<KvTransferConfig> kv_transfer_config = std::nullopt;  // nothing: no KV transfer
  bool enable_return_routed_experts = false;                          // aux_output_config
  bool enable_sleep_mode = false;                                     // model_config
  double cpu_offload_gb = 0;                                          // offload_config.uva
  int offload_group_size = 0;                                         // offload_config.prefetch
  bool weight_transfer = false;                                       // weight_transfer_config set
  // speculative_config
  std::optional<int> num_speculative_tokens;  // nothing: no speculative decoding
  bool enable_adaptive_verification = false;
  bool dynamic_speculative_decoding = false;  // uses_dynamic_speculative_decoding()
  int max_rows = 16;
  // cache_config
  model::Dtype conv_state_dtype = model::Dtype::kBF16;
  model::Dtype recurrent_state_dtype = model::Dtype::kF32;
  bool use_replayssm = false;
  bool use_kda_recoverssm = false;
  // The runner and compilation: the executor is built by Model Runner V2's model-state hooks, and
  // plan and the launches run in forward, which torch.compile would trace.
  bool use_v2_model_runner = true;   // VLLM_USE_V2_MODEL_RUNNER=1
  bool stock_torch_compile = false;  // compilation_config.mode == STOCK_TORCH_COMPILE
  CudaGraphMode cudagraph_mode = CudaGraphMode::kNone;
  const model::ModelConfig* model = nullptr;  // required for the specialized backend
  DeviceFacts device;
  // For the tools' one-rank runs only (`monotile decode --tp T --rank R`): this rank runs alone,
  // the other ranks' partial sums in every reduction stood in by zero, so its outputs are not the
  // layer's. Without it (or checking_exchanges) TP > 1 is refused (tp_reasons.h): the kernels'
  // exchanges between ranks are not checked across GPUs yet.
  bool other_ranks_stood_in = false;
  // For the tools' runs of every rank that check those exchanges (`mpirun -np T monotile decode
  // --mpi`): TP > 1 is served where the kernels are shaped for it, since checking the exchanges is
  // what the run is for.
  bool checking_exchanges = false;
};

// TP sizes the kernels are shaped for: 1 (one process), 2 and 4 (ranks sharing one GPU, tests) and
// 8 (K3's deployment), K2's reductions exchanging partial sums over the group's peer buffers above
// 1. The deployment check serves only TP 1 (tp_reasons.h).
inline constexpr int kKernelTpSizes[] = {1, 2, 4, 8};

// Nothing for decode_backend "auto" (the stock decode runs). InvalidArgument for an unknown backend
// name, and for the specialized backend when any of these applies, listing every one in the seed's
// order: TP > 1 (the exchanges between ranks are not yet checked across GPUs; with
// other_ranks_stood_in or checking_exchanges, a TP size the kernels are not shaped for), pipeline
// parallelism, data parallelism, expert parallelism, EPLB, decode context parallelism other than 1
// or TP, prefill context parallelism, DBO, LoRA, KV connectors other than a MoRIIO consumer,
// routed-expert capture, sleep mode, CPU weight offload, weight updates, max_rows other than 8 or
// 16, no speculative decoding, q beyond 8 (K1's bound, at any max_rows) or beyond max_rows,
// adaptive verification, dynamic speculative decoding, KDA cache dtypes other than a bf16 conv and
// an fp32 recurrent state, ReplaySSM / RecoverSSM, the V1 model runner, torch.compile, no model, a
// model whose shapes differ from the kernels' (model::config_reasons, the TP split), a device with
// fewer compute units than max_rows or a partitioned one. A deployment it accepts with
// deployment_warnings is logged as a warning (log_warning).
absl::StatusOr<std::optional<DecodeConfig>> specialized_decode_config(const DecodeOptions& options);

// What the specialized decode serves but not as asked, as the seed warns: PIECEWISE-only decode
// graphs (a cudagraph_mode whose decode mode is not FULL) capture every decode step as stock.
std::vector<std::string> deployment_warnings(const DecodeOptions& options);

}  // namespace monotile::runtime::decode
