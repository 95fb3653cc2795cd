// `monotile decode --check`: each served layer's inputs read before it and its outputs held to the
// float64 reference of that layer after it; see decode_job.h. At TP > 1 under --mpi the reference
// is the layer over every rank (TP 1's up to rounding): each rank gathers the other ranks' KDA
// caches and o_proj partials through the group and loads their weights from the model.
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "model/dtype.h"
#include "runtime/decode/layer_check.h"
#include "support/status_macros.h"
#include "tools/decode_job.h"
#include "tools/host_all_reduce.h"

namespace monotile::tools {
namespace {

// A cache as bytes for the group: slots, state_len and the two sizes, then the values.
std::string cache_bytes(const ref::KdaCache& c) {
  const int64_t header[4] = {c.slots, c.state_len, static_cast<int64_t>(c.conv.size()),
                             static_cast<int64_t>(c.state.size())};
  std::string bytes(reinterpret_cast<const char*>(header), sizeof(header));
  bytes.append(reinterpret_cast<const char*>(c.conv.data()), c.conv.size() * sizeof(double));
  bytes.append(reinterpret_cast<const char*>(c.state.data()), c.state.size() * sizeof(double));
  return bytes;
}

absl::StatusOr<ref::KdaCache> cache_from(const std::string& bytes, int rank) {
  int64_t header[4] = {};
  const auto refused = [&] {
    return absl::InternalError(absl::StrCat("--check: rank ", rank, " sent a KDA cache of ",
                                            bytes.size(), " bytes that does not parse"));
  };
  if (bytes.size() < sizeof(header)) return refused();
  std::memcpy(header, bytes.data(), sizeof(header));
  if (header[2] < 0 || header[3] < 0 ||
      bytes.size() !=
          sizeof(header) + static_cast<size_t>(header[2] + header[3]) * sizeof(double)) {
    return refused();
  }
  ref::KdaCache c;
  c.slots = header[0];
  c.state_len = header[1];
  c.conv.resize(static_cast<size_t>(header[2]));
  c.state.resize(static_cast<size_t>(header[3]));
  const char* at = bytes.data() + sizeof(header);
  std::memcpy(c.conv.data(), at, c.conv.size() * sizeof(double));
  std::memcpy(c.state.data(), at + c.conv.size() * sizeof(double), c.state.size() * sizeof(double));
  return c;
}

}  // namespace

absl::StatusOr<std::span<const ref::RankLayerWeights>> DecodeJob::group_weights(int layer) {
  auto found = group_weights_.find(layer);
  if (found == group_weights_.end()) {
    std::vector<ref::RankLayerWeights> ranks;
    for (int r = 0; r < o_.tp; ++r) {
      MT_ASSIGN_OR_RETURN(model::RankPlan plan, model::plan_rank(config_, o_.tp, r));
      MT_ASSIGN_OR_RETURN(
          ref::RankLayerWeights w,
          ref::load_rank_layer(plan.layers.at(static_cast<size_t>(layer)), plan.dims, *source_));
      ranks.push_back(std::move(w));
    }
    found = group_weights_.emplace(layer, std::move(ranks)).first;
  }
  return std::span<const ref::RankLayerWeights>(found->second);
}

absl::Status DecodeJob::read_inputs(int layer, runtime::DevicePtr delta) {
  const int64_t blocks = config_.block_count();
  const size_t th = static_cast<size_t>(o_.requests * o_.q * config_.hidden_size);
  ref::LayerInput& in = inputs_[layer];
  in = ref::LayerInput();
  MT_ASSIGN_OR_RETURN(in.prefix, host_->read_bf16(step_.prefix.address(), th, stream_));
  if (delta != 0) {
    MT_ASSIGN_OR_RETURN(in.delta, host_->read_bf16(delta, th, stream_));
  }
  MT_ASSIGN_OR_RETURN(in.blocks, host_->read_bf16(step_.blocks.address(),
                                                  th * static_cast<size_t>(blocks), stream_));
  in.meta = {o_.requests, o_.q, step_.host.state_indices, step_.host.num_accepted};
  if (config_.is_kda_layer(layer)) {
    MT_ASSIGN_OR_RETURN(ref::KdaCache c, host_->read_cache(caches_.at(layer), stream_));
    if (!exchanging_) {
      in.caches.push_back(std::move(c));
    } else {
      // Every rank's caches, in rank order: the reference runs the layer over all of them.
      MT_ASSIGN_OR_RETURN(std::vector<std::string> all, group_->all_gather(cache_bytes(c)));
      for (size_t r = 0; r < all.size(); ++r) {
        MT_ASSIGN_OR_RETURN(ref::KdaCache theirs, cache_from(all[r], static_cast<int>(r)));
        in.caches.push_back(std::move(theirs));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeJob::check_outputs(int layer, bool served, runtime::DevicePtr out) {
  const int width = o_.requests * o_.q;
  const int64_t blocks = config_.block_count();
  const size_t th = static_cast<size_t>(width * config_.hidden_size);
  const bool kda = config_.is_kda_layer(layer);
  const bool check_standin = host_->kind() == StandinKind::kKernels;
  ref::LayerInput& in = inputs_.at(layer);
  if (served) {
    MT_RETURN_IF_ERROR(decode_->check_health());
  } else {
    MT_RETURN_IF_ERROR(device_->synchronize(stream_));
    MT_RETURN_IF_ERROR(host_->check_health());
  }
  if (served && !kda) {
    MT_ASSIGN_OR_RETURN(in.attention_output, host_->attention_output(layer, width, stream_));
    if (exchanging_) {
      // This rank's partial of a; the layer's a is the ranks' bf16 partials summed, rounded once.
      MT_ASSIGN_OR_RETURN(in.attention_output, sum_over_ranks(*group_, in.attention_output));
      for (double& v : in.attention_output) v = model::round_to_bf16(v);
    }
  }
  // K1's linear in_proj has its own rounding points at in_proj's input (docs/k1_linear.md).
  const ref::InProjInput in_proj_input =
      absl::c_linear_search(decode_->stats().k1_linear_widths, width)
          ? ref::InProjInput::kLinearSources
          : ref::InProjInput::kRoundedX;
  dec::LayerResult result;
  MT_ASSIGN_OR_RETURN(result.prefix, host_->read_bf16(step_.prefix.address(), th, stream_));
  MT_ASSIGN_OR_RETURN(result.blocks, host_->read_bf16(step_.blocks.address(),
                                                      th * static_cast<size_t>(blocks), stream_));
  MT_ASSIGN_OR_RETURN(result.out, host_->read_bf16(out, th, stream_));
  if (kda) {
    MT_ASSIGN_OR_RETURN(result.cache, host_->read_cache(caches_.at(layer), stream_));
  }
  std::vector<kernels::k3::OutputCheck> outputs;
  if (exchanging_ && !served) {
    // A stand-in run whole, against the layer over every rank.
    MT_ASSIGN_OR_RETURN(std::span<const ref::RankLayerWeights> ranks, group_weights(layer));
    MT_ASSIGN_OR_RETURN(outputs, host_->check_layer(layer, in, result, ranks, o_.rank));
  } else if (exchanging_) {
    // A served layer against the layer over every rank.
    MT_ASSIGN_OR_RETURN(std::span<const ref::RankLayerWeights> ranks, group_weights(layer));
    MT_ASSIGN_OR_RETURN(dec::LayerCheck check, dec::check_layer(config_, layer, ranks, in, result,
                                                                o_.rank, in_proj_input));
    outputs = std::move(check.outputs);
    if (!kda && check_standin) {
      // The MLA stand-in's core is this rank's heads': its own reference.
      MT_ASSIGN_OR_RETURN(kernels::k3::OutputCheck core,
                          host_->check_attention(layer, step_.host, stream_));
      outputs.push_back(std::move(core));
    }
  } else if (served) {
    MT_ASSIGN_OR_RETURN(const ref::RankLayerWeights* w, host_->weights(layer));
    MT_ASSIGN_OR_RETURN(dec::LayerCheck check,
                        dec::check_layer(config_, layer, *w, in, result, in_proj_input));
    outputs = std::move(check.outputs);
    if (!kda && check_standin) {
      MT_ASSIGN_OR_RETURN(kernels::k3::OutputCheck core,
                          host_->check_attention(layer, step_.host, stream_));
      outputs.push_back(std::move(core));
    }
  } else {
    MT_ASSIGN_OR_RETURN(outputs, host_->check_layer(layer, in, result));
  }
  LayerRow& row = rows_[layer];
  row.checked = true;
  for (const kernels::k3::OutputCheck& output : outputs) {
    row.worst_rms = std::max(row.worst_rms, output.worst_rms);
    if (output.passed()) continue;
    row.passed = checks_passed_ = false;
    std::printf("  layer %d %s: %lld of %lld values fail; first: %s\n", layer, output.name.c_str(),
                static_cast<long long>(output.failures), static_cast<long long>(output.compared),
                output.first_failure.c_str());
  }
  return absl::OkStatus();
}

}  // namespace monotile::tools
