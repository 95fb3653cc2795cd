// Reading, checking and writing the step files of `monotile layer`; see layer_io.h.
#include "tools/layer_io.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/safetensors.h"
#include "support/status_macros.h"

namespace monotile::tools {
namespace {

using model::Dtype;

constexpr int64_t kHeadDim = 128;
constexpr const char* kNamesHint = "the names, dtypes and layouts are listed in docs/layer_run.md";

std::string dtype_text(Dtype dtype) { return std::string(model::dtype_name(dtype)); }

std::string shape_text(const std::vector<int64_t>& shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

// Reads one tensor of `file`, checked against its dtype and shape.
class StepReader {
 public:
  StepReader(std::string path, const model::SafetensorsFile& file) : path_(std::move(path)), file_(file) {}

  bool has(const std::string& name) const { return file_.find(name) != nullptr; }

  // `meaning` spells the shape in the config's terms ("[T, H] with T = N x q = 8").
  template <typename T>
  absl::StatusOr<std::vector<T>> read(const std::string& name, Dtype dtype, const std::vector<int64_t>& shape,
                                      const std::string& meaning, const std::string& hint) const {
    const model::TensorInfo* info = file_.find(name);
    if (info == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": no tensor \"", name, "\" (expected ", dtype_text(dtype),
                                                     " ", shape_text(shape), ", ", meaning, "); hint: ", kNamesHint));
    }
    if (info->dtype != dtype || info->shape != shape) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor \"", name, "\": expected ", dtype_text(dtype),
                                                     " ", shape_text(shape), " (", meaning, "), got ",
                                                     dtype_text(info->dtype), " ", shape_text(info->shape),
                                                     "; hint: ", hint));
    }
    if (!info->contiguous()) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor \"", name, "\" is stored strided or padded (",
                                                     info->end - info->begin, " bytes for ", info->nbytes(),
                                                     "); hint: save a contiguous tensor (.contiguous() before saving)"));
    }
    std::vector<T> values(static_cast<size_t>(info->elements()));
    std::span<const uint8_t> bytes = file_.bytes(*info);
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
    return values;
  }

  // The tensor's shape, after checking its dtype and rank.
  absl::StatusOr<std::vector<int64_t>> shape_of(const std::string& name, Dtype dtype, size_t rank,
                                                const std::string& meaning) const {
    const model::TensorInfo* info = file_.find(name);
    if (info == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": no tensor \"", name, "\" (expected ", dtype_text(dtype),
                                                     " ", meaning, "); hint: ", kNamesHint));
    }
    if (info->dtype != dtype || info->shape.size() != rank) {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor \"", name, "\": expected ", dtype_text(dtype),
                                                     " ", meaning, ", got ", dtype_text(info->dtype), " ",
                                                     shape_text(info->shape), "; hint: ", kNamesHint));
    }
    return info->shape;
  }

  absl::Status refuse(const std::string& name, const std::string& what, const std::string& hint) const {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor \"", name, "\": ", what, "; hint: ", hint));
  }

 private:
  std::string path_;
  const model::SafetensorsFile& file_;
};

template <typename T>
std::vector<uint8_t> bytes_of(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<int64_t> conv_shape(const LayerStep& step, const LayerShape& shape) {
  return step.dim_first ? std::vector<int64_t>{step.slots, shape.channels(), step.state_len}
                        : std::vector<int64_t>{step.slots, step.state_len, shape.channels()};
}

}  // namespace

LayerShape layer_shape(const model::ModelConfig& config, const model::RankDims& dims, bool attention, bool ffn,
                       int64_t core_width) {
  return {.hidden = config.hidden_size,
          .block_count = config.block_count(),
          .heads = dims.kda_heads,
          .projection = dims.kda_projection,
          .attention = attention,
          .ffn = ffn,
          .core_width = core_width,
          .top_k = config.num_experts_per_token};
}

namespace {

// vLLM's query_start_loc for N requests of q tokens: 0, q, 2q, ..., Rq for the R real requests,
// then Rq repeated for the requests a FULL graph's replay pads (vLLM 0.33.0's gdn_attn.py writes
// the last real end: [0, q, 2q, 2q] for 2 real requests of 3). Returns R, or the refusal naming
// the first entry that is neither.
absl::StatusOr<int64_t> real_requests(const StepReader& in, const std::vector<int32_t>& loc, int64_t q,
                                      const std::string& hint) {
  const int64_t n = static_cast<int64_t>(loc.size()) - 1;
  int64_t real = 0;
  while (real < n && loc[real + 1] == (real + 1) * q) ++real;
  for (int64_t i = 0; i <= n; ++i) {
    const int64_t expected = std::min(i, std::max<int64_t>(real, 1)) * q;
    if (loc[i] != expected || q < 1) {
      return in.refuse("query_start_loc",
                       absl::StrCat("query_start_loc[", i, "] = ", loc[i], ", expected ", i * q, " (= ", i,
                                    " x q = ", q, ")",
                                    i > 1 ? absl::StrCat(" or, for a padded request, ", real * q,
                                                         " (the last real request's end repeated)")
                                          : ""),
                       hint);
    }
  }
  return real;
}

// An FFN layer's step: the batch from query_start_loc, the prefix, the blocks and the attention
// output core.
absl::StatusOr<LayerStep> read_ffn_step(const StepReader& in, const LayerShape& shape) {
  LayerStep step;
  MT_ASSIGN_OR_RETURN(std::vector<int64_t> loc_shape,
                      in.shape_of("query_start_loc", Dtype::kI32, 1, "[N + 1], 0, q, 2q, ..., Nq"));
  const int64_t n = loc_shape[0] - 1;
  if (n < 1) {
    return in.refuse("query_start_loc", absl::StrCat("shape ", shape_text(loc_shape), " has no request"),
                     "a step has at least one request");
  }
  MT_ASSIGN_OR_RETURN(step.query_start_loc, in.read<int32_t>("query_start_loc", Dtype::kI32, {n + 1}, "[N + 1]", kNamesHint));
  const int64_t q = step.query_start_loc[1];
  MT_RETURN_IF_ERROR(real_requests(in, step.query_start_loc, q,
                                   "K2 serves uniform spec-verify batches: every request has q >= 1 tokens; pad "
                                   "short requests")
                         .status());
  step.requests = static_cast<int>(n);
  step.q = static_cast<int>(q);
  const int64_t tokens = n * q;
  const std::string rows = absl::StrCat("T = N x q = ", tokens, " from query_start_loc, H = hidden_size ", shape.hidden);
  MT_ASSIGN_OR_RETURN(step.prefix, in.read<uint16_t>("prefix", Dtype::kBF16, {tokens, shape.hidden}, absl::StrCat("[T, H], ", rows),
                                                     "the residual prefix after the attention AttnRes (the delta folded in)"));
  MT_ASSIGN_OR_RETURN(step.blocks,
                      in.read<uint16_t>("blocks", Dtype::kBF16, {tokens, shape.block_count, shape.hidden},
                                        absl::StrCat("[T, blocks, H], ", rows, ", blocks = ", shape.block_count,
                                                     " AttnRes blocks of the model"),
                                        "every block of the model, written or not (vLLM's AttnRes block buffer)"));
  MT_ASSIGN_OR_RETURN(step.core,
                      in.read<uint16_t>("core", Dtype::kBF16, {tokens, shape.core_width},
                                        absl::StrCat("[T, W], T = N x q = ", tokens, ", W = ", shape.core_width,
                                                     " o_proj input columns of this rank"),
                                        "the MLA attention output before o_proj (after the output gate), this rank's "
                                        "heads' columns"));
  return step;
}

}  // namespace

absl::StatusOr<LayerStep> read_layer_step(const std::string& path, const LayerShape& shape) {
  absl::StatusOr<std::unique_ptr<model::SafetensorsFile>> opened = model::SafetensorsFile::open(path);
  if (!opened.ok()) return with_context(opened.status(), "reading the step's inputs");
  const model::SafetensorsFile& file = **opened;
  StepReader in(path, file);
  const std::set<std::string> known =
      shape.attention ? std::set<std::string>{"prefix", "delta", "blocks", kConvStateName, kConvStateDimFirstName,
                                              "recurrent_state", "state_indices", "num_accepted", "query_start_loc"}
                      : std::set<std::string>{"prefix", "blocks", "core", "query_start_loc"};
  for (const model::TensorInfo& tensor : file.tensors()) {
    if (!known.contains(tensor.name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": unknown tensor \"", tensor.name, "\"; expected only ", absl::StrJoin(known, ", "), "; hint: ",
          shape.attention ? kNamesHint
                          : "an FFN layer's step has no KDA caches, and its prefix has the delta folded in (the "
                            "attention AttnRes ran before the attention); the names are listed in docs/layer_run.md"));
    }
  }
  if (!shape.attention) return read_ffn_step(in, shape);
  LayerStep step;
  // The batch: N requests of q tokens, from state_indices.
  MT_ASSIGN_OR_RETURN(std::vector<int64_t> indices_shape,
                      in.shape_of("state_indices", Dtype::kI32, 2, "[N, q] (column 0 the conv slot)"));
  step.requests = static_cast<int>(indices_shape[0]);
  step.q = static_cast<int>(indices_shape[1]);
  const int64_t n = step.requests, q = step.q, tokens = n * q;
  if (n < 1 || q < 1) {
    return in.refuse("state_indices", absl::StrCat("shape ", shape_text(indices_shape), " has no token"),
                     "a step has at least one request of q >= 2 tokens");
  }
  MT_ASSIGN_OR_RETURN(step.state_indices, in.read<int32_t>("state_indices", Dtype::kI32, {n, q}, "[N, q]", kNamesHint));
  const std::string batch = absl::StrCat("N = ", n, " requests from state_indices");
  MT_ASSIGN_OR_RETURN(step.num_accepted, in.read<int32_t>("num_accepted", Dtype::kI32, {n}, absl::StrCat("[N], ", batch),
                                                          "one count per request of state_indices"));
  MT_ASSIGN_OR_RETURN(step.query_start_loc,
                      in.read<int32_t>("query_start_loc", Dtype::kI32, {n + 1}, absl::StrCat("[N + 1], ", batch),
                                       "vLLM's query_start_loc of the step, one entry more than the requests"));
  MT_ASSIGN_OR_RETURN(
      const int64_t real,
      real_requests(in, step.query_start_loc, q,
                    "K1 serves uniform spec-verify batches: every request has q tokens; pad short requests"));
  // A padded request (its query_start_loc entry the last end repeated) is served like a real one,
  // as the seed serves it; its slots must be vLLM's NULL_BLOCK_ID (0) or -1, so that it reads and
  // writes no state.
  for (int64_t i = real; i < n; ++i) {
    for (int64_t t = 0; t < q; ++t) {
      const int32_t slot = step.state_indices[static_cast<size_t>(i * q + t)];
      if (slot > 0) {
        return in.refuse("state_indices",
                         absl::StrCat("state_indices[", i, ", ", t, "] = ", slot, " in request ", i,
                                      ", which query_start_loc pads (query_start_loc[", i + 1, "] = ",
                                      step.query_start_loc[static_cast<size_t>(i + 1)],
                                      " repeats the last real end); expected NULL_BLOCK_ID 0 (or -1)"),
                         "vLLM pads a FULL graph's replay with whole requests of slot 0 and one accepted token");
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    if (step.num_accepted[i] < 1 || step.num_accepted[i] > q) {
      return in.refuse("num_accepted", absl::StrCat("num_accepted[", i, "] = ", step.num_accepted[i], ", expected 1..", q),
                       "a request accepts between 1 and q tokens (a padded request: 1)");
    }
  }
  // The rows.
  const std::string rows = absl::StrCat("T = N x q = ", tokens, ", H = hidden_size ", shape.hidden);
  MT_ASSIGN_OR_RETURN(step.prefix, in.read<uint16_t>("prefix", Dtype::kBF16, {tokens, shape.hidden}, absl::StrCat("[T, H], ", rows),
                                                     "the residual prefix before the layer, one row per token"));
  step.has_delta = in.has("delta");
  if (step.has_delta) {
    MT_ASSIGN_OR_RETURN(step.delta, in.read<uint16_t>("delta", Dtype::kBF16, {tokens, shape.hidden}, absl::StrCat("[T, H], ", rows),
                                                      "the previous layer's MLP output, like prefix; leave it out when none is pending"));
  }
  MT_ASSIGN_OR_RETURN(step.blocks,
                      in.read<uint16_t>("blocks", Dtype::kBF16, {tokens, shape.block_count, shape.hidden},
                                        absl::StrCat("[T, blocks, H], ", rows, ", blocks = ", shape.block_count,
                                                     " AttnRes blocks of the model"),
                                        "every block of the model, written or not (vLLM's AttnRes block buffer)"));
  // The caches: slots from the recurrent state.
  const std::string heads = absl::StrCat("[slots, NHl, 128, 128] with NHl = ", shape.heads, " heads of this rank, V-first");
  MT_ASSIGN_OR_RETURN(std::vector<int64_t> state_shape, in.shape_of("recurrent_state", Dtype::kF32, 4, heads));
  step.slots = state_shape[0];
  MT_ASSIGN_OR_RETURN(step.recurrent_state,
                      in.read<float>("recurrent_state", Dtype::kF32, {step.slots, shape.heads, kHeadDim, kHeadDim}, heads,
                                     "this rank's share of the layer's ssm state, [slots, heads, V, K]"));
  const bool last = in.has(kConvStateName), first = in.has(kConvStateDimFirstName);
  if (last == first) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": ", last ? "both" : "neither", " of \"", kConvStateName, "\" [slots, SL, 3 Pl] and \"",
        kConvStateDimFirstName, "\" [slots, 3 Pl, SL]; expected exactly one; hint: name the conv state by its layout"));
  }
  step.dim_first = first;
  const std::string conv_name = first ? kConvStateDimFirstName : kConvStateName;
  const std::string conv_meaning =
      absl::StrCat(first ? "[slots, 3 Pl, SL]" : "[slots, SL, 3 Pl]", " with slots = ", step.slots,
                   " from recurrent_state, 3 Pl = ", shape.channels(), " q|k|v channels of this rank");
  MT_ASSIGN_OR_RETURN(std::vector<int64_t> conv_dims, in.shape_of(conv_name, Dtype::kBF16, 3, conv_meaning));
  step.state_len = first ? conv_dims[2] : conv_dims[1];
  MT_ASSIGN_OR_RETURN(step.conv_state, in.read<uint16_t>(conv_name, Dtype::kBF16, conv_shape(step, shape), conv_meaning,
                                                         "both caches hold the same slots; the channels are this rank's"));
  for (int64_t i = 0; i < tokens; ++i) {
    if (step.state_indices[i] >= step.slots) {
      return in.refuse("state_indices", absl::StrCat("state_indices[", i / q, ", ", i % q, "] = ", step.state_indices[i],
                                                     " is past the ", step.slots, " cache slots"),
                       "slots index the caches' first dimension; a padded request uses a slot <= 0");
    }
  }
  return step;
}

absl::Status write_layer_step(const std::string& path, const LayerStep& step, const LayerShape& shape) {
  const int64_t tokens = step.tokens(), n = step.requests;
  std::vector<model::TensorToWrite> tensors;
  tensors.push_back({"prefix", Dtype::kBF16, {tokens, shape.hidden}, bytes_of(step.prefix)});
  if (!shape.attention) {
    tensors.push_back({"blocks", Dtype::kBF16, {tokens, shape.block_count, shape.hidden}, bytes_of(step.blocks)});
    tensors.push_back({"core", Dtype::kBF16, {tokens, shape.core_width}, bytes_of(step.core)});
    tensors.push_back({"query_start_loc", Dtype::kI32, {n + 1}, bytes_of(step.query_start_loc)});
    return model::write_safetensors(path, tensors, {{"format", "pt"}});
  }
  if (step.has_delta) tensors.push_back({"delta", Dtype::kBF16, {tokens, shape.hidden}, bytes_of(step.delta)});
  tensors.push_back({"blocks", Dtype::kBF16, {tokens, shape.block_count, shape.hidden}, bytes_of(step.blocks)});
  tensors.push_back({step.dim_first ? kConvStateDimFirstName : kConvStateName, Dtype::kBF16, conv_shape(step, shape),
                     bytes_of(step.conv_state)});
  tensors.push_back({"recurrent_state", Dtype::kF32, {step.slots, shape.heads, kHeadDim, kHeadDim},
                     bytes_of(step.recurrent_state)});
  tensors.push_back({"state_indices", Dtype::kI32, {n, step.q}, bytes_of(step.state_indices)});
  tensors.push_back({"num_accepted", Dtype::kI32, {n}, bytes_of(step.num_accepted)});
  tensors.push_back({"query_start_loc", Dtype::kI32, {n + 1}, bytes_of(step.query_start_loc)});
  return model::write_safetensors(path, tensors, {{"format", "pt"}});
}

absl::Status write_layer_outputs(const std::string& path, const LayerStep& step, const LayerShape& shape,
                                 const LayerOutputs& out) {
  const int64_t tokens = step.tokens();
  std::vector<model::TensorToWrite> tensors;
  tensors.push_back({"prefix", Dtype::kBF16, {tokens, shape.hidden}, bytes_of(out.prefix)});
  if (shape.attention) {
    tensors.push_back({"blocks", Dtype::kBF16, {tokens, shape.block_count, shape.hidden}, bytes_of(out.blocks)});
    tensors.push_back({"x", Dtype::kBF16, {tokens, shape.hidden}, bytes_of(out.x)});
    tensors.push_back({"core", Dtype::kBF16, {tokens, shape.projection}, bytes_of(out.core)});
    tensors.push_back({step.dim_first ? kConvStateDimFirstName : kConvStateName, Dtype::kBF16,
                       conv_shape(step, shape), bytes_of(out.conv_state)});
    tensors.push_back({"recurrent_state", Dtype::kF32, {step.slots, shape.heads, kHeadDim, kHeadDim},
                       bytes_of(out.recurrent_state)});
  }
  if (shape.ffn) {
    tensors.push_back({"a", Dtype::kBF16, {tokens, shape.hidden}, bytes_of(out.a)});
    tensors.push_back({"y", Dtype::kBF16, {tokens, shape.hidden}, bytes_of(out.y)});
    tensors.push_back({"route_experts", Dtype::kI32, {tokens, shape.top_k}, bytes_of(out.route_experts)});
    tensors.push_back({"route_weights", Dtype::kF32, {tokens, shape.top_k}, bytes_of(out.route_weights)});
    tensors.push_back({"out", Dtype::kBF16, {tokens, shape.hidden}, bytes_of(out.out)});
  }
  return model::write_safetensors(path, tensors, {{"format", "pt"}});
}

}  // namespace monotile::tools
