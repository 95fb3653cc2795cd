// What one TP rank reads of a checkpoint, as vLLM 0.33.0 loads it (k3_checkpoint.md 3): for each
// layer the checkpoint tensors it expects and the per-rank tensors it builds from row/column
// slices of them (merged in_proj with zero pad rows, replicated f_a, conv [q_r|k_r|v_r], experts
// split on the intermediate, ...). A rank reads exactly the bytes of its slices, nothing more.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/checkpoint.h"
#include "model/config.h"
#include "model/dtype.h"

namespace monotile::model {

// A checkpoint tensor a rank needs, with the shape and dtype the config implies.
struct ExpectedTensor {
  std::string name;
  Dtype dtype = Dtype::kBF16;
  std::vector<int64_t> shape;
  // A 1-D tensor that may be longer than `shape` says (A_log: the checkpoint holds [128] for 96
  // heads; only the first entries are read).
  bool at_least = false;
  // Small fp32 tensors whose values are checked finite.
  bool check_finite = false;
};

// One block of a per-rank tensor: `rows` rows of a checkpoint tensor from `row_begin`, bytes
// [col_byte_begin, +col_bytes) of each, placed at row `dest_row` (and the matching columns) of the
// destination. Tensors are seen as 2-D: rows = product of all dims but the last (a 1-D tensor's
// elements are its rows).
struct SourceSlice {
  std::string tensor;
  int64_t row_begin = 0;
  int64_t rows = 0;
  int64_t col_byte_begin = 0;
  int64_t col_bytes = 0;
  int64_t dest_row = 0;
  int64_t dest_col_byte = 0;
};

// A tensor as one rank's kernels read it (vLLM's parameter name relative to the layer). Rows no
// slice covers are zero (the in_proj pad, vocab padding).
struct RankTensor {
  std::string name;
  Dtype dtype = Dtype::kBF16;
  Dtype source_dtype = Dtype::kBF16;  // differs only for o_norm (f32 checkpoint, bf16 parameter)
  std::vector<int64_t> shape;
  std::vector<SourceSlice> slices;

  int64_t elements() const;
  uint64_t nbytes() const { return static_cast<uint64_t>(elements()) * dtype_size(dtype); }
  uint64_t bytes_read() const;
};

struct LayerPlan {
  int layer = -1;  // -1: the model-level tensors (embedding, final norms, lm_head)
  AttentionKind attention = AttentionKind::kKda;
  bool moe = false;
  ServedKind served = ServedKind::kNone;
  std::vector<ExpectedTensor> expected;
  std::vector<RankTensor> tensors;

  uint64_t bytes_read() const;
  const RankTensor* find(std::string_view name) const;
};

struct RankPlan {
  RankDims dims;
  std::vector<LayerPlan> layers;  // layer 0..n-1, then the model-level entry
  uint64_t bytes_read() const;
};

absl::StatusOr<RankPlan> plan_rank(const ModelConfig& config, int tp, int rank);

// The tensor's bytes for this rank, read through `source` slice by slice. Refused, naming the
// tensor: a source missing, of another dtype, strided, or too small for a slice.
absl::StatusOr<std::vector<uint8_t>> load_rank_tensor(const RankTensor& tensor, const TensorSource& source);

}  // namespace monotile::model
