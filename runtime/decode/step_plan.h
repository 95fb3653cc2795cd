// plan: the seed's routing decision for one step, made on the host with no launch and no compile.
// A step runs the kernels only when it is a pure spec-verify step of whole uniform requests that
// fills a width with kernels; every other step runs the host's layers. The inputs are identical on
// every TP rank, so the verdict is too.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/config.h"
#include "runtime/decode/cache_reasons.h"
#include "runtime/decode/decode_config.h"
#include "runtime/decode/group.h"
#include "runtime/decode/tensor_view.h"

namespace monotile::runtime::decode {

// One layer's speculative-decode attention metadata, the fields vLLM's GDN metadata carries.
struct SpecMetadata {
  bool spec_sequence_masks = false;  // present (not None)
  int num_prefills = 0;
  int num_decodes = 0;
  int num_spec_decodes = 0;
  std::optional<int> uniform_spec_sequence_length;
  TensorView spec_state_indices;    // i32 [N, q]: column 0 the conv slot
  TensorView num_accepted_tokens;   // i32 [N], 1..q
  TensorView spec_query_start_loc;  // i32 [N + 1]
};

// By layer name ("language_model.model.layers.1.self_attn": SpecializedDecode::attention_name).
using AttnMetadata = std::map<std::string, SpecMetadata, std::less<>>;

enum class GraphMode { kNone, kPiecewise, kFull };

// What the host knows of a step when its forward starts.
struct StepInputs {
  int width = 0;                       // the rows: positions' last dimension
  bool pipeline_stage_inputs = false;  // intermediate tensors from an earlier pipeline stage
  bool forward_context = true;         // a forward context is available
  GraphMode graph_mode = GraphMode::kNone;
  const AttnMetadata* attn_metadata = nullptr;  // nothing: no metadata
  // The recurrent state bound to the first KDA layer now (nothing: none bound).
  const TensorView* kda_state = nullptr;
};

// Nothing if the metadata is a pure spec-verify step of whole uniform requests filling `width`
// rows; else the first of, in this order: "no metadata", "not spec-verify" (no entry for
// `kda_prefix`, or no spec_sequence_masks), "not pure decode" (prefills, non-spec decodes, or no
// spec decode), "not uniform" (uniform_spec_sequence_length differs from spec_state_indices'
// columns, or num_spec_decodes x q differs from width).
std::optional<std::string_view> step_reason(const AttnMetadata* attn_metadata,
                                            std::string_view kda_prefix, int width);

// A planned step (SpecializedDecode wraps it as its Step): `width` rows of whole uniform
// spec-verify requests.
struct PlannedStep {
  int width = 0;
  const AttnMetadata* attn_metadata = nullptr;
  const std::vector<int>* layers = nullptr;  // the served layers, ascending

  // Whether decoder layer `layer` runs a kernel in this step (else the host's layer runs).
  bool serves(int layer) const;
};

// The host-side state of the executor that prepare_kv and plan need: the widths with kernels, the
// served layers, the first KDA layer's name (the step's routing source) and the KV binding.
class StepPlanner {
 public:
  StepPlanner(DecodeConfig config, const model::ModelConfig& model, model::RankDims dims,
              std::vector<int> layers, std::string kda_prefix);

  // After each KV-cache bind (the profiling cache, then the real one): forgets the previous
  // binding; with nothing bound on any rank (no caches, or an empty recurrent state) returns; else
  // agrees over `group` on `reasons` (the caller's: a served layer without a cache) and
  // cache_reasons, a rank with nothing bound refusing beside bound peers, and records the first KDA
  // layer's state (address, elements). Every rank calls it at the same point: none refuses alone.
  absl::Status prepare_kv(const std::vector<KdaCache>& caches, Group& group,
                          std::vector<std::string> reasons = {});

  // Forgets the binding, with no collective: after a failure every rank has agreed on.
  void unbind() { kv_.reset(); }

  // Nothing, by the seed's rules in its order, for: pipeline-stage inputs or no KV bound; no
  // forward context; a PIECEWISE graph step; a width with no kernels; a step_reason. A step whose
  // first KDA state is not the one prepare_kv recorded is FailedPrecondition (re-bound without
  // prepare_kv). Compiles nothing, allocates nothing.
  absl::StatusOr<std::optional<PlannedStep>> plan(const StepInputs& step) const;

  const DecodeConfig& config() const { return config_; }
  bool kv_bound() const { return kv_.has_value(); }
  const std::string& kda_prefix() const { return kda_prefix_; }

 private:
  struct KvKey {
    uint64_t data = 0;
    int64_t elements = 0;
    bool operator==(const KvKey&) const = default;
  };
  static std::optional<KvKey> kv_key(const TensorView* state);

  DecodeConfig config_;
  const model::ModelConfig* model_;
  model::RankDims dims_;
  std::vector<int> layers_;
  std::string kda_prefix_;
  std::optional<KvKey> kv_;
};

}  // namespace monotile::runtime::decode
