// monotile.testing: what tests and benchmarks of a Python host need from the C++ side: a rank's
// seeded K3 weights as numpy arrays (the values model::SeededWeights draws, in vLLM's per-rank
// names and layouts), and one served layer's step against the float64 reference.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/reference/k3_layer_reference.h"
#include "kernels/reference/k3_parts.h"
#include "model/seeded_weights.h"
#include "model/shard_plan.h"
#include "python/src/bindings.h"
#include "python/src/status_errors.h"
#include "runtime/decode/layer_check.h"
#include "support/strings.h"

namespace monotile::python {
namespace {

namespace ref = kernels::reference;
using Vec = std::vector<double>;
using Array = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

// A numpy array over `data`, kept alive by `owner`, of the dtype numpy has for `dtype` (bf16 as
// uint16 bits).
nb::object numpy_array_at(void* data, nb::handle owner, model::Dtype dtype,
                          const std::vector<int64_t>& shape) {
  std::vector<size_t> dims(shape.begin(), shape.end());
  nb::dlpack::dtype d;
  switch (dtype) {
    case model::Dtype::kBF16:
    case model::Dtype::kU16:
      d = nb::dtype<uint16_t>();
      break;
    case model::Dtype::kF32:
      d = nb::dtype<float>();
      break;
    case model::Dtype::kI32:
      d = nb::dtype<int32_t>();
      break;
    case model::Dtype::kU8:
      d = nb::dtype<uint8_t>();
      break;
    case model::Dtype::kI8:
      d = nb::dtype<int8_t>();
      break;
    default:
      throw std::runtime_error(
          absl::StrCat("no numpy dtype for ", to_absl(model::dtype_name(dtype))));
  }
  return nb::cast(nb::ndarray<nb::numpy>(data, dims.size(), dims.data(), owner, nullptr, d));
}

// A new numpy array of `bytes`.
nb::object numpy_array(std::vector<uint8_t> bytes, model::Dtype dtype,
                       const std::vector<int64_t>& shape) {
  auto* owned = new std::vector<uint8_t>(std::move(bytes));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<uint8_t>*>(p); });
  return numpy_array_at(owned->data(), owner, dtype, shape);
}

// A numpy array at an address nobody reads, of `dtype` and `shape`: for measuring the host path on
// the launch-counting device, which runs no kernel. Reading its elements faults.
constexpr uintptr_t kNowhere = 0x1000;
nb::object placeholder(model::Dtype dtype, const std::vector<int64_t>& shape) {
  // Its owner keeps nothing: there is nothing to keep.
  nb::capsule owner(reinterpret_cast<void*>(kNowhere), [](void*) noexcept {});
  return numpy_array_at(reinterpret_cast<void*>(kNowhere), owner, dtype, shape);
}

template <typename T>
const T* typed(const Array& a, std::string_view what) {
  if (a.dtype() != nb::dtype<T>()) {
    raise_refusal(absl::StrCat("check_layer: ", to_absl(what), " has another dtype than the ",
                               sizeof(T) * 8, "-bit one expected"));
  }
  return static_cast<const T*>(a.data());
}

Vec bf16_values(const Array& a, std::string_view what) {
  const uint16_t* bits = typed<uint16_t>(a, what);
  Vec out(a.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = model::bf16_to_float(bits[i]);
  return out;
}

Vec f32_values(const Array& a, std::string_view what) {
  const float* v = typed<float>(a, what);
  return Vec(v, v + a.size());
}

std::vector<int32_t> i32_values(const Array& a, std::string_view what) {
  const int32_t* v = typed<int32_t>(a, what);
  return std::vector<int32_t>(v, v + a.size());
}

ref::KdaCache kda_cache(const Array& conv, const Array& state) {
  if (conv.ndim() != 3) raise_refusal("check_layer: conv: expected [slots, state_len, 3 Pl]");
  ref::KdaCache c;
  c.slots = static_cast<int64_t>(conv.shape(0));
  c.state_len = static_cast<int64_t>(conv.shape(1));
  c.conv = bf16_values(conv, "conv");
  c.state = f32_values(state, "state");
  return c;
}

}  // namespace

void bind_testing(nb::module_& m) {
  m.def(
      "seeded_rank_weights",
      [](const model::ModelConfig& config, int tp, int rank, uint64_t seed, int start_layer,
         int end_layer) {
        std::unique_ptr<model::SeededWeights> source =
            value(model::SeededWeights::create(config, seed));
        const model::RankPlan plan = value(model::plan_rank(config, tp, rank));
        nb::dict out;
        for (const model::LayerPlan& layer : plan.layers) {
          if (layer.layer < start_layer || layer.layer >= end_layer) continue;
          nb::dict tensors;
          for (const model::RankTensor& tensor : layer.tensors) {
            tensors[tensor.name.c_str()] = numpy_array(
                value(model::load_rank_tensor(tensor, *source)), tensor.dtype, tensor.shape);
          }
          out[nb::int_(layer.layer)] = tensors;
        }
        return out;
      },
      nb::arg("config"), nb::arg("tp"), nb::arg("rank"), nb::arg("seed"), nb::arg("start_layer"),
      nb::arg("end_layer"),
      nb::sig("def seeded_rank_weights(config: monotile._monotile.ModelConfig, tp: int, rank: int, "
              "seed: int, "
              "start_layer: int, end_layer: int) -> dict[int, dict[str, numpy.ndarray]]"),
      "Rank `rank`'s tensors of layers [start_layer, end_layer) as new numpy arrays (bf16 as "
      "uint16 bits), by layer "
      "and vLLM's parameter name: the values model::SeededWeights(seed) draws, sliced as vLLM "
      "shards them.");

  m.def(
      "placeholder_rank_weights",
      [](const model::ModelConfig& config, int tp, int rank) {
        const model::RankPlan plan = value(model::plan_rank(config, tp, rank));
        nb::dict out;
        for (const model::LayerPlan& layer : plan.layers) {
          if (layer.layer < 0) continue;
          nb::dict tensors;
          for (const model::RankTensor& tensor : layer.tensors) {
            tensors[tensor.name.c_str()] = placeholder(tensor.dtype, tensor.shape);
          }
          out[nb::int_(layer.layer)] = tensors;
        }
        return out;
      },
      nb::arg("config"), nb::arg("tp"), nb::arg("rank"),
      "Rank `rank`'s tensors of every layer as numpy arrays of the plan's dtypes and shapes at an "
      "address nobody reads (K3 at TP 8 without its 200 GB): only for an executor on "
      "launch_counting_device(), which runs no kernel. Reading their elements faults.");
  m.def(
      "placeholder",
      [](const std::string& dtype, const std::vector<int64_t>& shape) {
        std::optional<model::Dtype> d = model::dtype_from_name(dtype);
        if (!d) raise_refusal(absl::StrCat("placeholder: unknown dtype \"", dtype, "\""));
        return placeholder(*d, shape);
      },
      nb::arg("dtype"), nb::arg("shape"), "One such array ('BF16', 'F32', 'I32' or 'U8').");

  m.def(
      "check_layer",
      [](const model::ModelConfig& config, uint64_t seed, int layer, int requests, int q,
         const Array& state_indices, const Array& num_accepted, const Array& prefix,
         const Array& delta, const Array& blocks, std::optional<Array> conv,
         std::optional<Array> state, std::optional<Array> core, const Array& prefix_after,
         const Array& blocks_after, const Array& out, std::optional<Array> conv_after,
         std::optional<Array> state_after, int tp, int rank, std::vector<Array> every_rank_conv,
         std::vector<Array> every_rank_state) {
        std::unique_ptr<model::SeededWeights> source =
            value(model::SeededWeights::create(config, seed));
        if (tp < 1 || rank < 0 || rank >= tp)
          raise_refusal(
              absl::StrCat("check_layer: rank ", rank, " of TP ", tp, ", expected 0 <= rank < tp"));
        // Every rank's weights of the layer (the reference sums their partials); w is this rank's.
        std::vector<ref::RankLayerWeights> ranks;
        for (int r = 0; r < tp; ++r) {
          const model::RankPlan plan = value(model::plan_rank(config, tp, r));
          ranks.push_back(value(ref::load_rank_layer(plan.layers.at(static_cast<size_t>(layer)),
                                                     plan.dims, *source)));
        }
        const ref::RankLayerWeights& w = ranks[static_cast<size_t>(rank)];
        ref::LayerInput in;
        in.prefix = bf16_values(prefix, "prefix");
        in.delta = bf16_values(delta, "delta");
        in.blocks = bf16_values(blocks, "blocks");
        in.meta = {requests, q, i32_values(state_indices, "state_indices"),
                   i32_values(num_accepted, "num_accepted")};
        const bool kda = config.is_kda_layer(layer);
        if (tp > 1) {
          // At TP > 1 the reference needs every rank's caches before the step; an MLA layer's
          // attention output would be every rank's o_proj partial, which no caller hands in.
          if (!kda)
            raise_refusal(absl::StrCat("check_layer: layer ", layer, " is an MLA layer; at TP ", tp,
                                       " only KDA layers are checked"));
          if (every_rank_conv.size() != static_cast<size_t>(tp) ||
              every_rank_state.size() != static_cast<size_t>(tp))
            raise_refusal(absl::StrCat("check_layer: every_rank_conv and every_rank_state hold ",
                                       every_rank_conv.size(), " and ", every_rank_state.size(),
                                       " arrays, expected one per rank (", tp, ")"));
          for (int r = 0; r < tp; ++r)
            in.caches.push_back(kda_cache(every_rank_conv[static_cast<size_t>(r)],
                                          every_rank_state[static_cast<size_t>(r)]));
        } else if (kda) {
          if (!conv || !state) raise_refusal("check_layer: a KDA layer needs conv and state");
          in.caches.push_back(kda_cache(*conv, *state));
        } else {
          if (!core) raise_refusal("check_layer: an MLA layer needs core (o_proj's input)");
          // The attention output the reference takes: o_proj of the core the host's half returned.
          const Vec c = bf16_values(*core, "core");
          const int64_t h = config.hidden_size, width = requests * q;
          const int64_t columns = static_cast<int64_t>(c.size()) / width;
          in.attention_output.resize(static_cast<size_t>(width * h));
          for (int64_t t = 0; t < width; ++t) {
            Vec a = ref::matvec(w.at("self_attn.o_proj.weight"),
                                std::span(c).subspan(t * columns, columns), h, columns);
            for (int64_t i = 0; i < h; ++i)
              in.attention_output[t * h + i] = model::round_to_bf16(a[i]);
          }
        }
        runtime::decode::LayerResult result;
        result.prefix = bf16_values(prefix_after, "prefix_after");
        result.blocks = bf16_values(blocks_after, "blocks_after");
        result.out = bf16_values(out, "out");
        if (kda) {
          if (!conv_after || !state_after)
            raise_refusal("check_layer: a KDA layer needs conv_after and state_after");
          result.cache = kda_cache(*conv_after, *state_after);
        }
        const runtime::decode::LayerCheck check =
            tp == 1 ? value(runtime::decode::check_layer(config, layer, w, in, result))
                    : value(runtime::decode::check_layer(config, layer, ranks, in, result, rank));
        nb::list outputs;
        for (const kernels::k3::OutputCheck& o : check.outputs) {
          nb::dict d;
          d["name"] = o.name;
          d["passed"] = o.passed();
          d["compared"] = o.compared;
          d["failures"] = o.failures;
          d["worst_ulps"] = o.worst_ulps;
          d["first_failure"] = o.first_failure;
          outputs.append(d);
        }
        nb::dict d;
        d["outputs"] = outputs;
        d["rows"] = check.rows;
        d["clear_rows"] = check.clear_rows;
        d["passed"] = check.passed();
        return d;
      },
      nb::arg("config"), nb::arg("seed"), nb::arg("layer"), nb::kw_only(), nb::arg("requests"),
      nb::arg("q"), nb::arg("state_indices"), nb::arg("num_accepted"), nb::arg("prefix"),
      nb::arg("delta"), nb::arg("blocks"), nb::arg("conv").none() = nb::none(),
      nb::arg("state").none() = nb::none(), nb::arg("core").none() = nb::none(),
      nb::arg("prefix_after"), nb::arg("blocks_after"), nb::arg("out"),
      nb::arg("conv_after").none() = nb::none(), nb::arg("state_after").none() = nb::none(),
      nb::arg("tp") = 1, nb::arg("rank") = 0, nb::arg("every_rank_conv") = std::vector<Array>{},
      nb::arg("every_rank_state") = std::vector<Array>{},
      "One served layer's step on rank `rank` of TP `tp` (default 0 of 1 (weights "
      "model::SeededWeights(seed)) against the "
      "float64 "
      "reference of that layer on the inputs it had (at TP > 1, KDA layers only: every rank's "
      "caches before the step in every_rank_conv and every_rank_state, this rank's after it in "
      "conv_after and state_after; the reference sums every rank's partials) (numpy, bf16 as "
      "uint16 bits): the prefix and "
      "blocks after "
      "it, the KDA caches, and the MoE output on rows with a clear top-k. Returns {'passed', "
      "'rows', "
      "'clear_rows', 'outputs': [{'name', 'passed', 'compared', 'failures', 'worst_ulps', "
      "'first_failure'}]}.");
}

}  // namespace monotile::python
