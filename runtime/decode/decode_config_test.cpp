#include "runtime/decode/decode_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "absl/strings/str_cat.h"

namespace monotile::runtime::decode {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const model::ModelConfig& k3() {
  static const model::ModelConfig config = *model::load_config("k3");
  return config;
}

// One K3 rank at TP 8 as the tools run it: alone, the other ranks' partial sums stood in (without
// the stand-in TP 8 is refused: TpAboveOneIsRefusedUntilTheExchangesAreCheckedAcrossGpus).
DecodeOptions k3_options() {
  DecodeOptions options;
  options.decode_backend = "latency_specialized";
  options.tensor_parallel_size = 8;
  options.other_ranks_stood_in = true;
  options.num_speculative_tokens = 3;
  options.model = &k3();
  options.device = {132, false};
  return options;
}

std::string refusal(const DecodeOptions& options) {
  absl::StatusOr<std::optional<DecodeConfig>> config = specialized_decode_config(options);
  EXPECT_FALSE(config.ok());
  return config.ok() ? std::string() : std::string(config.status().message());
}

TEST(DecodeConfig, WidthsAreEveryMultipleOfQUpToMaxRows) {
  for (int max_rows : {8, 16}) {
    for (int q = 2; q <= 8; ++q) {
      std::vector<int> expected;
      for (int width = q; width <= max_rows; width += q) expected.push_back(width);
      EXPECT_EQ((DecodeConfig{q, max_rows}.widths()), expected)
          << "q " << q << " max_rows " << max_rows;
    }
  }
  EXPECT_EQ((DecodeConfig{3, 8}.widths()), (std::vector<int>{3, 6}));
  EXPECT_EQ((DecodeConfig{3, 16}.widths()), (std::vector<int>{3, 6, 9, 12, 15}));
  EXPECT_EQ((DecodeConfig{8, 8}.widths()), (std::vector<int>{8}));
}

TEST(DecodeConfig, HasWidthMatchesWidths) {
  DecodeConfig config{4, 16};
  for (int width = -1; width <= 20; ++width) {
    std::vector<int> widths = config.widths();
    EXPECT_EQ(config.has_width(width),
              std::find(widths.begin(), widths.end(), width) != widths.end())
        << width;
  }
}

TEST(DecodeConfig, MaxRowsDefaultsToSixteen) {
  EXPECT_EQ(DecodeConfig{}.max_rows, 16);
}

TEST(SpecializedDecodeConfig, AutoIsTheStockDecode) {
  DecodeOptions options;  // every other field unsupported, and not looked at
  options.tensor_parallel_size = 3;
  absl::StatusOr<std::optional<DecodeConfig>> config = specialized_decode_config(options);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_FALSE(config->has_value());
}

TEST(SpecializedDecodeConfig, UnknownBackendIsRefused) {
  DecodeOptions options = k3_options();
  options.decode_backend = "fast";
  EXPECT_EQ(refusal(options),
            "unknown decode_backend \"fast\": expected \"auto\" or \"latency_specialized\"");
}

TEST(SpecializedDecodeConfig, K3AtTp8GivesQ) {
  absl::StatusOr<std::optional<DecodeConfig>> config = specialized_decode_config(k3_options());
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_TRUE(config->has_value());
  EXPECT_EQ((*config)->q, 4);
  EXPECT_EQ((*config)->max_rows, 16);
}

TEST(SpecializedDecodeConfig, K3TinyOnTheCpuInterpreterAtTp1And8) {
  model::ModelConfig tiny = *model::load_config("k3-tiny");
  DeviceInfo cpu;
  cpu.compute_units = 2;
  for (int tp : {1, 8}) {
    DecodeOptions options = k3_options();
    options.model = &tiny;
    options.tensor_parallel_size = tp;
    options.device = device_facts(cpu);
    absl::StatusOr<std::optional<DecodeConfig>> config = specialized_decode_config(options);
    EXPECT_TRUE(config.ok()) << "TP " << tp << ": " << config.status();
  }
}

TEST(SpecializedDecodeConfig, MaxRowsEightAsTheSeed) {
  DecodeOptions options = k3_options();
  options.max_rows = 8;
  options.num_speculative_tokens = 7;
  absl::StatusOr<std::optional<DecodeConfig>> config = specialized_decode_config(options);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ((*config)->widths(), (std::vector<int>{8}));
}

TEST(SpecializedDecodeConfig, TpAboveOneIsRefusedUntilTheExchangesAreCheckedAcrossGpus) {
  for (int tp : {2, 4, 8}) {
    DecodeOptions options = k3_options();
    options.other_ranks_stood_in = false;
    options.tensor_parallel_size = tp;
    std::string message = refusal(options);
    EXPECT_THAT(message, HasSubstr(absl::StrCat(
                             "TP ", tp,
                             ": the kernels' reductions across TP ranks are checked on the CPU "
                             "interpreter and at TP 2 with two processes on one GPU, not across "
                             "GPUs yet, so a deployment could return wrong layer outputs "
                             "unnoticed; expected TP 1")));
    EXPECT_THAT(message, HasSubstr("(decode_backend \"auto\" runs the stock decode)"));
    EXPECT_THAT(message, Not(HasSubstr("the kernels are built for")));
  }
}

TEST(SpecializedDecodeConfig, ARunCheckingTheExchangesServesTpTheKernelsAreShapedFor) {
  for (int tp : {2, 4, 8}) {
    DecodeOptions options = k3_options();
    options.other_ranks_stood_in = false;
    options.checking_exchanges = true;
    options.tensor_parallel_size = tp;
    absl::StatusOr<std::optional<DecodeConfig>> config = specialized_decode_config(options);
    EXPECT_TRUE(config.ok()) << "TP " << tp << ": " << config.status();
  }
  DecodeOptions options = k3_options();
  options.other_ranks_stood_in = false;
  options.checking_exchanges = true;
  options.tensor_parallel_size = 3;
  std::string message = refusal(options);
  EXPECT_THAT(message, HasSubstr("TP 3: the kernels are built for TP 1, 2, 4 or 8"));
  EXPECT_THAT(message, Not(HasSubstr("not across GPUs yet")));
}

TEST(SpecializedDecodeConfig, K3AtTp1IsServed) {
  DecodeOptions options = k3_options();
  options.other_ranks_stood_in = false;
  options.tensor_parallel_size = 1;
  absl::StatusOr<std::optional<DecodeConfig>> config = specialized_decode_config(options);
  EXPECT_TRUE(config.ok()) << config.status();
}

TEST(SpecializedDecodeConfig, TheStandInStillRefusesTpTheKernelsAreNotShapedFor) {
  DecodeOptions options = k3_options();
  options.tensor_parallel_size = 3;
  std::string message = refusal(options);
  EXPECT_THAT(message, HasSubstr("TP 3: the kernels are built for TP 1, 2, 4 or 8"));
  EXPECT_THAT(message, HasSubstr("(decode_backend \"auto\" runs the stock decode)"));
}

TEST(SpecializedDecodeConfig, RefusesPipelineParallelism) {
  DecodeOptions options = k3_options();
  options.pipeline_parallel_size = 2;
  EXPECT_THAT(refusal(options),
              HasSubstr("pipeline parallelism (pipeline_parallel_size 2): expected 1"));
}

TEST(SpecializedDecodeConfig, RefusesNoSpeculativeDecoding) {
  DecodeOptions options = k3_options();
  options.num_speculative_tokens.reset();
  EXPECT_THAT(refusal(options),
              HasSubstr("no speculative decoding: the kernels serve spec-verify steps; set "
                        "num_speculative_tokens"));
}

TEST(SpecializedDecodeConfig, RefusesZeroSpeculativeTokens) {
  DecodeOptions options = k3_options();
  options.num_speculative_tokens = 0;
  EXPECT_THAT(refusal(options), HasSubstr("num_speculative_tokens 0: expected at least 1"));
}

TEST(SpecializedDecodeConfig, RefusesQBeyondEightAtAnyMaxRows) {
  for (int max_rows : {8, 16}) {
    for (int q = 9; q <= 16; ++q) {
      DecodeOptions options = k3_options();
      options.max_rows = max_rows;
      options.num_speculative_tokens = q - 1;
      EXPECT_THAT(
          refusal(options),
          HasSubstr("q " + std::to_string(q) + " (num_speculative_tokens " + std::to_string(q - 1) +
                    " + 1): K1 serves q up to 8; expected at most 7 speculative tokens"))
          << "max_rows " << max_rows;
    }
  }
}

TEST(SpecializedDecodeConfig, AcceptsQUpToEight) {
  for (int max_rows : {8, 16}) {
    for (int q = 2; q <= 8; ++q) {
      DecodeOptions options = k3_options();
      options.max_rows = max_rows;
      options.num_speculative_tokens = q - 1;
      absl::StatusOr<std::optional<DecodeConfig>> config = specialized_decode_config(options);
      EXPECT_TRUE(config.ok()) << "q " << q << " max_rows " << max_rows << ": " << config.status();
    }
  }
}

TEST(SpecializedDecodeConfig, RefusesQBeyondMaxRows) {
  DecodeOptions options = k3_options();
  options.max_rows = 4;
  options.num_speculative_tokens = 4;
  EXPECT_THAT(refusal(options),
              HasSubstr("q 5 (num_speculative_tokens 4 + 1) beyond max_rows 4: expected at most 3 "
                        "speculative tokens"));
}

TEST(SpecializedDecodeConfig, RefusesMaxRowsOtherThanEightOrSixteen) {
  DecodeOptions options = k3_options();
  options.max_rows = 12;
  EXPECT_THAT(refusal(options), HasSubstr("max_rows 12: expected 8 or 16"));
}

TEST(SpecializedDecodeConfig, RefusesKdaCacheDtypes) {
  DecodeOptions options = k3_options();
  options.conv_state_dtype = model::Dtype::kF32;
  options.recurrent_state_dtype = model::Dtype::kBF16;
  EXPECT_THAT(refusal(options),
              HasSubstr("KDA cache dtypes conv F32, recurrent BF16: expected conv BF16, "
                        "recurrent F32"));
}

TEST(SpecializedDecodeConfig, RefusesModelShapesTheKernelsAreNotWrittenFor) {
  model::ModelConfig config = k3();
  config.kda_head_dim = 64;
  DecodeOptions options = k3_options();
  options.model = &config;
  EXPECT_THAT(refusal(options),
              HasSubstr("model \"k3\" config: KDA head_dim 64, short_conv_kernel_size 4, "
                        "use_full_rank_gate 1; expected 128, 4, true"));
}

TEST(SpecializedDecodeConfig, RefusesAModelThatDoesNotSplitOverTheTp) {
  model::ModelConfig config = k3();
  config.kda_num_heads = 92;
  DecodeOptions options = k3_options();
  options.model = &config;
  EXPECT_THAT(refusal(options), HasSubstr("model \"k3\" does not split over TP 8: "));
}

TEST(SpecializedDecodeConfig, RefusesNoModel) {
  DecodeOptions options = k3_options();
  options.model = nullptr;
  EXPECT_THAT(
      refusal(options),
      HasSubstr("no model config: expected the model's ModelConfig in DecodeOptions::model"));
}

TEST(SpecializedDecodeConfig, RefusesTooFewComputeUnits) {
  DecodeOptions options = k3_options();
  options.device.compute_units = 14;
  EXPECT_THAT(refusal(options),
              HasSubstr("a device with 14 compute units: expected at least 16 (max_rows)"));
}

TEST(SpecializedDecodeConfig, TheCpuInterpreterHoldsEveryProgramResident) {
  DeviceInfo cpu;
  cpu.compute_units = 2;
  DecodeOptions options = k3_options();
  options.device = device_facts(cpu);
  EXPECT_TRUE(specialized_decode_config(options).ok());
}

TEST(SpecializedDecodeConfig, AGpusComputeUnitsComeFromItsDeviceInfo) {
  DeviceInfo gpu;
  gpu.vendor = dsl::Vendor::kNvidia;
  gpu.compute_units = 8;
  DecodeOptions options = k3_options();
  options.device = device_facts(gpu, true);
  std::string message = refusal(options);
  EXPECT_THAT(message, HasSubstr("a device with 8 compute units: expected at least 16"));
  EXPECT_THAT(message, HasSubstr("a partitioned GPU"));
}

TEST(SpecializedDecodeConfig, RefusesAPartitionedGpu) {
  DecodeOptions options = k3_options();
  options.device.partitioned = true;
  EXPECT_THAT(refusal(options),
              HasSubstr("a partitioned GPU (MIG, CU masking or a shared device): the persistent "
                        "kernels need every program resident at once and would deadlock; use a "
                        "whole GPU"));
}

TEST(SpecializedDecodeConfig, ListsEveryReasonInOneMessageInRuleOrder) {
  DecodeOptions options = k3_options();
  options.other_ranks_stood_in = false;
  options.tensor_parallel_size = 2;
  options.pipeline_parallel_size = 2;
  options.num_speculative_tokens.reset();
  options.conv_state_dtype = model::Dtype::kF16;
  options.device = {8, true};
  std::string message = refusal(options);
  std::vector<std::string> in_order = {
      "TP 2: ",           "pipeline parallelism",          "no speculative decoding",
      "KDA cache dtypes", "a device with 8 compute units", "a partitioned GPU"};
  size_t at = 0;
  for (const std::string& reason : in_order) {
    size_t found = message.find(reason, at);
    EXPECT_NE(found, std::string::npos) << reason << " after " << at << " in: " << message;
    if (found != std::string::npos) at = found;
  }
  EXPECT_EQ(message.rfind("the specialized decode does not support this deployment: TP 2: ", 0), 0u)
      << message;
}

// Each of the seed's refusals beyond TP, PP, speculation, the cache dtypes and the model: one
// setting away from K3's deployment, refused with its words.
struct SeedRefusal {
  std::function<void(DecodeOptions&)> set;
  std::string words;
};

std::vector<SeedRefusal> seed_refusals() {
  return {
      {[](DecodeOptions& o) { o.data_parallel_size = 2; },
       "data parallelism (data_parallel_size 2): expected 1"},
      {[](DecodeOptions& o) { o.enable_expert_parallel = true; },
       "expert parallelism (enable_expert_parallel): the kernels read every expert's TP slice on "
       "every rank"},
      {[](DecodeOptions& o) { o.enable_eplb = true; },
       "EPLB (enable_eplb): the kernels read the loaded experts in place"},
      {[](DecodeOptions& o) { o.decode_context_parallel_size = 2; },
       "decode context parallelism other than 1 or TP (decode_context_parallel_size 2, TP 8)"},
      {[](DecodeOptions& o) { o.prefill_context_parallel_size = 2; },
       "prefill context parallelism (prefill_context_parallel_size 2): expected 1"},
      {[](DecodeOptions& o) { o.use_ubatching = true; },
       "DBO (dual-batch overlap, use_ubatching): the kernels read one batch's attention metadata a "
       "step"},
      {[](DecodeOptions& o) { o.lora = true; },
       "LoRA (lora_config): the kernels apply no adapters"},
      {[](DecodeOptions& o) {
         o.kv_transfer_config = KvTransferConfig{"NixlConnector", {}, "kv_both"};
       },
       "KV transfer connectors other than a MoRIIO consumer (kv_connector \"NixlConnector\", "
       "kv_role "
       "\"kv_both\"): MoRIIO consumers finish their loads before execution, other connectors hook "
       "into the layers"},
      {[](DecodeOptions& o) {
         o.kv_transfer_config = KvTransferConfig{"MoRIIOConnector", {}, "kv_producer"};
       },
       "(kv_connector \"MoRIIOConnector\", kv_role \"kv_producer\")"},
      {[](DecodeOptions& o) {
         o.kv_transfer_config = KvTransferConfig{"MoRIIOConnector", "my.moriio", "kv_consumer"};
       },
       "(kv_connector \"MoRIIOConnector\", kv_role \"kv_consumer\", kv_connector_module_path "
       "\"my.moriio\")"},
      {[](DecodeOptions& o) { o.enable_return_routed_experts = true; },
       "routed-expert capture (enable_return_routed_experts): the kernels return no routes"},
      {[](DecodeOptions& o) { o.enable_sleep_mode = true; },
       "sleep mode (enable_sleep_mode): the kernels read the loaded weights in place"},
      {[](DecodeOptions& o) { o.cpu_offload_gb = 4; },
       "CPU weight offload (cpu_offload_gb 4, offload_group_size 0): the kernels read the loaded "
       "weights in place"},
      {[](DecodeOptions& o) { o.offload_group_size = 8; },
       "CPU weight offload (cpu_offload_gb 0, offload_group_size 8)"},
      {[](DecodeOptions& o) { o.weight_transfer = true; },
       "weight updates (weight_transfer_config): the kernels read the loaded weights in place, and "
       "construction checked them once"},
      {[](DecodeOptions& o) { o.enable_adaptive_verification = true; },
       "adaptive verification (enable_adaptive_verification): the kernels verify every speculative "
       "token of a uniform step"},
      {[](DecodeOptions& o) { o.dynamic_speculative_decoding = true; },
       "dynamic speculative decoding: the kernels are built for one q"},
      {[](DecodeOptions& o) { o.use_replayssm = true; },
       "ReplaySSM / RecoverSSM (use_replayssm 1, use_kda_recoverssm 0): K1 keeps no such records"},
      {[](DecodeOptions& o) { o.use_kda_recoverssm = true; },
       "ReplaySSM / RecoverSSM (use_replayssm 0, use_kda_recoverssm 1)"},
      {[](DecodeOptions& o) { o.use_v2_model_runner = false; },
       "the V1 model runner (set VLLM_USE_V2_MODEL_RUNNER=1): the executor is built and bound by "
       "Model Runner V2's model-state hooks"},
      {[](DecodeOptions& o) { o.stock_torch_compile = true; },
       "torch.compile (compilation mode STOCK_TORCH_COMPILE): plan and the layer kernels run in "
       "forward, which a compiled forward would trace"},
  };
}

TEST(SpecializedDecodeConfig, RefusesEachOfTheSeedsSettingsWithItsWords) {
  for (const SeedRefusal& r : seed_refusals()) {
    DecodeOptions options = k3_options();
    r.set(options);
    EXPECT_THAT(refusal(options), HasSubstr(r.words));
  }
}

TEST(SpecializedDecodeConfig, AcceptsAMoriioConsumerAndDcpOfTp) {
  DecodeOptions options = k3_options();
  options.kv_transfer_config = KvTransferConfig{"MoRIIOConnector", {}, "kv_consumer"};
  options.decode_context_parallel_size = 8;
  absl::StatusOr<std::optional<DecodeConfig>> config = specialized_decode_config(options);
  EXPECT_TRUE(config.ok()) << config.status();
}

TEST(SpecializedDecodeConfig, ListsEverySeedRefusalWithTheOthersInTheSeedsOrder) {
  DecodeOptions options = k3_options();
  for (const SeedRefusal& r : seed_refusals()) r.set(options);
  options.pipeline_parallel_size = 2;
  options.conv_state_dtype = model::Dtype::kF16;
  options.device.partitioned = true;
  const std::string message = refusal(options);
  std::vector<std::string> in_order = {"pipeline parallelism",
                                       "data parallelism",
                                       "expert parallelism",
                                       "EPLB",
                                       "decode context parallelism",
                                       "prefill context parallelism",
                                       "DBO",
                                       "LoRA",
                                       "KV transfer connectors",
                                       "routed-expert capture",
                                       "sleep mode",
                                       "CPU weight offload",
                                       "weight updates",
                                       "adaptive verification",
                                       "dynamic speculative decoding",
                                       "KDA cache dtypes",
                                       "ReplaySSM / RecoverSSM",
                                       "the V1 model runner",
                                       "torch.compile",
                                       "a partitioned GPU"};
  size_t at = 0;
  for (const std::string& reason : in_order) {
    size_t found = message.find(reason, at);
    EXPECT_NE(found, std::string::npos) << reason << " after " << at << " in: " << message;
    if (found != std::string::npos) at = found;
  }
}

TEST(SpecializedDecodeConfig, PiecewiseOnlyGraphsAreTheSeedsWarningNotARefusal) {
  DecodeOptions options = k3_options();
  for (CudaGraphMode mode : {CudaGraphMode::kNone, CudaGraphMode::kFull,
                             CudaGraphMode::kFullDecodeOnly, CudaGraphMode::kFullAndPiecewise}) {
    options.cudagraph_mode = mode;
    EXPECT_THAT(deployment_warnings(options), ::testing::IsEmpty()) << static_cast<int>(mode);
  }
  options.cudagraph_mode = CudaGraphMode::kPiecewise;
  const std::string words =
      "the specialized decode: PIECEWISE-only CUDA graphs capture every decode step as stock "
      "(cudagraph_mode PIECEWISE); use FULL decode graphs (FULL, FULL_DECODE_ONLY or "
      "FULL_AND_PIECEWISE)";
  EXPECT_THAT(deployment_warnings(options), ::testing::ElementsAre(words));
  ::testing::internal::CaptureStderr();
  absl::StatusOr<std::optional<DecodeConfig>> config = specialized_decode_config(options);
  const std::string logged = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->has_value());
  EXPECT_THAT(logged, HasSubstr(words));
}

TEST(SpecializedDecodeConfig, ReasonsListedWhateverSettingIsWrongFirst) {
  DecodeOptions device_only = k3_options();
  device_only.device.partitioned = true;
  DecodeOptions both = device_only;
  both.pipeline_parallel_size = 4;
  EXPECT_THAT(refusal(device_only), HasSubstr("a partitioned GPU"));
  std::string message = refusal(both);
  EXPECT_LT(message.find("pipeline parallelism"), message.find("a partitioned GPU"));
}

}  // namespace
}  // namespace monotile::runtime::decode
