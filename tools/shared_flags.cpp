// The flags several `monotile` subcommands take; each subcommand's usage text says what they mean
// there.
#include "tools/shared_flags.h"

#include "absl/flags/flag.h"

ABSL_FLAG(std::optional<std::string>, model, std::nullopt,
          "an embedded config name or a checkpoint folder");
ABSL_FLAG(std::optional<int>, tp, std::nullopt, "the tensor-parallel size");
ABSL_FLAG(std::optional<int>, rank, std::nullopt, "the TP rank");
ABSL_FLAG(std::optional<int>, q, std::nullopt, "tokens per request, num_speculative_tokens + 1");
ABSL_FLAG(std::optional<int>, max_rows, std::nullopt, "the executor's widest launch");
ABSL_FLAG(std::optional<std::string>, target, std::nullopt, "comma-separated targets");
ABSL_FLAG(std::string, cache_dir, "", "the writable cache folder");
ABSL_FLAG(std::optional<int>, jobs, std::nullopt, "parallel compiles");
ABSL_FLAG(std::string, only, "", "these kernels only, comma-separated");
ABSL_FLAG(std::string, out, "", "the file or folder written");
ABSL_FLAG(std::optional<uint64_t>, seed, std::nullopt, "the seed of the random weights or inputs");
ABSL_FLAG(std::optional<std::string>, device, std::nullopt, "cpu or gpu");
ABSL_FLAG(bool, check, false, "compare with the float64 reference");
ABSL_FLAG(std::optional<int>, requests, std::nullopt, "requests per step");
ABSL_FLAG(std::optional<int>, gpu_index, std::nullopt,
          "every rank of this machine on this GPU instead of GPU (local rank % GPUs)");
ABSL_FLAG(bool, k1_linear, false, "K1's linear in_proj at every width that takes it");
