// A rank's weights filled on the device, one layer per kind; see decode_random_weights.h.
#include "tools/decode_random_weights.h"

#include <algorithm>
#include <array>
#include <string>

#include "absl/strings/str_cat.h"
#include "kernels/standins/random_fill.h"
#include "model/dtype.h"
#include "model/seeded_weights.h"
#include "model/weight_roles.h"
#include "runtime/launch_state.h"
#include "support/check.h"
#include "support/status_macros.h"

namespace monotile::tools {
namespace {

namespace ref = kernels::reference;
using kernels::standins::kRandomFillBlock;

// What makes two layers one kind: the same tensors, dtypes and shapes.
std::string kind_key(const model::LayerPlan& layer) {
  std::string key;
  for (const model::RankTensor& t : layer.tensors) {
    absl::StrAppend(&key, t.name, ":", std::string(model::dtype_name(t.dtype)), ":");
    for (int64_t d : t.shape) absl::StrAppend(&key, d, ",");
    key += ";";
  }
  return key;
}

}  // namespace

absl::StatusOr<std::unique_ptr<AliasedWeights>> AliasedWeights::create(
    runtime::Device& device, jit::Jit& jit, const model::ModelConfig& config,
    const model::RankPlan& plan, int tp, int rank, uint64_t seed) {
  std::unique_ptr<AliasedWeights> w(new AliasedWeights());
  w->device_ = &device;
  w->plan_ = &plan;
  w->backbone_ = {.config = &config,
                  .tp = tp,
                  .rank = rank,
                  .start_layer = 0,
                  .end_layer = config.num_hidden_layers,
                  .weights = {},
                  .experts_layout = std::string(runtime::decode::kCheckpointExpertsLayout)};
  w->seed_ = seed;
  // One fill program per element type, loaded once.
  for (auto [dtype, type] :
       {std::pair{model::Dtype::kBF16, dsl::bf16}, std::pair{model::Dtype::kF32, dsl::f32},
        std::pair{model::Dtype::kU8, dsl::u8}}) {
    MT_ASSIGN_OR_RETURN(
        runtime::Kernel kernel,
        runtime::load_program(device, kernels::standins::random_fill_program(type), jit));
    w->programs_.emplace(dtype, std::pair{std::move(kernel), type.scalar});
  }
  MT_ASSIGN_OR_RETURN(w->stream_, device.create_stream());
  std::map<std::string, int> filled;  // kind key -> its filled layer
  for (const model::LayerPlan& layer : plan.layers) {
    if (layer.layer < 0) continue;
    auto [kind, fresh] = filled.emplace(kind_key(layer), layer.layer);
    w->source_[layer.layer] = kind->second;
    auto& views = w->backbone_.weights[layer.layer];
    if (!fresh) {
      views = w->backbone_.weights.at(kind->second);
      w->viewed_bytes_ += layer.bytes_read();
      continue;
    }
    w->kinds_.push_back(layer.layer);
    for (const model::RankTensor& t : layer.tensors) {
      MT_ASSIGN_OR_RETURN(runtime::DeviceBuffer buffer,
                          device.allocate(std::max<uint64_t>(t.nbytes(), 1)));
      const model::WeightDistribution values = model::weight_distribution(t.name, t.dtype, t.shape);
      MT_RETURN_IF_ERROR(w->launch_fill(buffer.address(), t.dtype, t.elements(),
                                        absl::StrCat("model.layers.", layer.layer, ".", t.name),
                                        static_cast<float>(values.low()),
                                        static_cast<float>(values.span())));
      views[t.name] = runtime::decode::TensorView::dense(t.dtype, t.shape, buffer.address());
      w->device_bytes_ += t.nbytes();
      w->buffers_.push_back(std::move(buffer));
    }
    w->viewed_bytes_ += layer.bytes_read();
  }
  MT_RETURN_IF_ERROR(device.synchronize(w->stream_));
  return w;
}

absl::Status AliasedWeights::launch_fill(runtime::DevicePtr address, model::Dtype dtype, int64_t n,
                                         std::string_view name, float low, float span) {
  auto program = programs_.find(dtype);
  MT_CHECK(program != programs_.end(), "the random fill makes BF16, F32 and U8 tensors only");
  if (n == 0) return absl::OkStatus();
  const uint32_t key = static_cast<uint32_t>(model::seeded_tensor_key(seed_, name));
  const std::array args{runtime::KernelArgument::pointer(reinterpret_cast<const void*>(address),
                                                         program->second.second),
                        runtime::KernelArgument::integer(dsl::ScalarType::kI64, n),
                        runtime::KernelArgument::integer(dsl::ScalarType::kU32, key),
                        runtime::KernelArgument::floating(dsl::ScalarType::kF32, low),
                        runtime::KernelArgument::floating(dsl::ScalarType::kF32, span)};
  const uint32_t blocks = static_cast<uint32_t>((n + kRandomFillBlock - 1) / kRandomFillBlock);
  return program->second.first.launch(runtime::Dim3{blocks, 1, 1}, args, stream_);
}

absl::Status AliasedWeights::fill(runtime::DevicePtr address, model::Dtype dtype, int64_t n,
                                  std::string_view name, float low, float span) {
  MT_RETURN_IF_ERROR(launch_fill(address, dtype, n, name, low, span));
  return device_->synchronize(stream_);
}

absl::StatusOr<std::shared_ptr<const ref::RankLayerWeights>> AliasedWeights::host_weights(
    int layer) {
  auto source = source_.find(layer);
  if (source == source_.end()) {
    return absl::NotFoundError(
        absl::StrCat("layer ", layer, " has no weights in this rank's plan"));
  }
  auto found = host_.find(source->second);
  if (found != host_.end()) return found->second;
  const model::LayerPlan& plan = plan_->layers.at(static_cast<size_t>(source->second));
  auto weights = std::make_shared<ref::RankLayerWeights>();
  weights->dims = plan_->dims;
  const auto& views = backbone_.weights.at(source->second);
  for (const model::RankTensor& t : plan.tensors) {
    std::vector<uint8_t> bytes(t.nbytes());
    MT_RETURN_IF_ERROR(
        device_->copy_to_host(bytes.data(), views.find(t.name)->second.data, bytes.size()));
    ref::add_rank_tensor(*weights, t, std::move(bytes));
  }
  host_[source->second] = weights;
  return std::shared_ptr<const ref::RankLayerWeights>(weights);
}

}  // namespace monotile::tools
