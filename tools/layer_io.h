// The files of `monotile layer run`: one spec-verify step of one layer on one TP rank, as vLLM's
// tensors (docs/layer_run.md): a KDA layer's step (the prefix, blocks, caches and metadata K1
// reads) or an FFN layer's (the prefix, blocks and the attention output `core` K2 reads). Inputs are read and checked by name, dtype and shape against
// the model's config and the rank's dimensions; every refusal names the file and the tensor, says
// what was expected and what was found, with a hint.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/config.h"

namespace monotile::tools {

// The conv state's two accepted layouts.
inline constexpr const char* kConvStateName = "conv_state";                     // [slots, SL, 3 Pl]
inline constexpr const char* kConvStateDimFirstName = "conv_state_dim_first";  // [slots, 3 Pl, SL]

// What the config, the rank and the stage fix about a step's tensors.
struct LayerShape {
  int64_t hidden = 0;       // H
  int64_t block_count = 0;  // the model's AttnRes blocks
  int64_t heads = 0;        // NHl
  int64_t projection = 0;   // Pl = NHl x 128
  bool attention = true;    // K1 runs: the file holds the KDA caches and metadata; core is an output
  bool ffn = false;         // K2 runs: a, y, the route and out are outputs
  int64_t core_width = 0;   // o_proj's input columns on this rank (KDA: Pl; MLA: heads x v_head_dim)
  int64_t top_k = 0;        // num_experts_per_token
  int64_t channels() const { return 3 * projection; }
};

// `attention`: K1 runs (a KDA layer); `ffn`: K2 runs; `core_width` as LayerShape's.
LayerShape layer_shape(const model::ModelConfig& config, const model::RankDims& dims, bool attention, bool ffn,
                       int64_t core_width);

// One step's tensors on the host. bf16 tensors are kept as their bits; the conv state in the file's
// layout (`dim_first`).
struct LayerStep {
  int requests = 0;  // N
  int q = 0;
  int64_t slots = 0;
  int64_t state_len = 0;  // SL
  bool has_delta = false;
  bool dim_first = false;
  std::vector<uint16_t> prefix;       // [T, H]
  std::vector<uint16_t> delta;        // [T, H] or empty
  std::vector<uint16_t> blocks;       // [T, block_count, H]
  std::vector<uint16_t> conv_state;   // [slots, SL, 3 Pl] or [slots, 3 Pl, SL]
  std::vector<float> recurrent_state; // [slots, NHl, 128, 128]
  std::vector<int32_t> state_indices; // [N, q]
  std::vector<int32_t> num_accepted;  // [N]
  std::vector<int32_t> query_start_loc;  // [N + 1]
  std::vector<uint16_t> core;         // [T, core_width]: an FFN layer's attention output (input)

  int tokens() const { return requests * q; }
  // Index of entry e of channel c of slot s in conv_state.
  int64_t conv_index(int64_t s, int64_t c, int64_t e, int64_t channels) const {
    return dim_first ? (s * channels + c) * state_len + e : (s * state_len + e) * channels + c;
  }
};

// Reads and checks `path`: a KDA layer's step when shape.attention, else an FFN layer's. Refused,
// naming the file and the tensor: a missing or unknown tensor (a KDA input in an FFN layer's file),
// a wrong dtype or shape (expected against actual, in the config's terms), a query_start_loc that
// is not n x q, num_accepted outside 1..q, a slot past the caches, both conv layouts or neither.
absl::StatusOr<LayerStep> read_layer_step(const std::string& path, const LayerShape& shape);

// Writes the step's inputs under the documented names.
absl::Status write_layer_step(const std::string& path, const LayerStep& step, const LayerShape& shape);

// The outputs of a run: every tensor K1 writes and the AttnRes output x it leaves in its scratch;
// every tensor K2 writes and a, y from its scratch. The prefix is the last kernel's.
struct LayerOutputs {
  std::vector<uint16_t> prefix, blocks, x, core, conv_state;  // K1's (prefix: either)
  std::vector<float> recurrent_state;
  std::vector<uint16_t> a, y, out;      // K2's, [T, H]
  std::vector<int32_t> route_experts;   // [T, top_k]
  std::vector<float> route_weights;     // [T, top_k]
};

absl::Status write_layer_outputs(const std::string& path, const LayerStep& step, const LayerShape& shape,
                                 const LayerOutputs& outputs);

}  // namespace monotile::tools
