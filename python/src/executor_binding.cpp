// SpecializedDecode from Python, in the seed's order of calls: construct once the weights are
// loaded, prepare_kv after every KV-cache bind, plan per forward, step.layer(i) per decoder layer,
// after_step once per executed step.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "absl/strings/str_cat.h"
#include "jit/jit.h"
#include "python/src/bindings.h"
#include "python/src/executor_object.h"
#include "python/src/status_errors.h"

namespace monotile::python {
namespace {

using runtime::decode::GraphMode;
using runtime::decode::SpecializedDecode;
using runtime::decode::StepInputs;
using runtime::decode::TensorView;

// The host's MLA half, called by the launch of an MLA layer: attention(layer, positions,
// prefix_sum, block_residual, prefix_delta) -> o_proj's input, bf16 [width, heads x v_head_dim of
// this rank].
absl::StatusOr<runtime::DevicePtr> call_attention(ExecutorObject& executor, int layer) {
  CurrentCall& call = executor.call;
  const std::string what = absl::StrCat("layer ", layer, " attention's result");
  executor.call.core = executor.attention(layer, call.positions, call.prefix_sum,
                                          call.block_residual, call.prefix_delta);
  const ImportedTensor core = import_tensor(call.core, what);
  check_device(core, executor.device->tensors, what);
  const std::vector<int64_t> shape = {
      call.width, int64_t{executor.dims.mla_heads} * executor.config->v_head_dim};
  if (core.view.dtype != model::Dtype::kBF16 || core.view.shape != shape ||
      !core.view.contiguous()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": expected BF16 ", runtime::decode::shape_text(shape),
                     " contiguous (o_proj's input), found ", runtime::decode::describe(core.view)));
  }
  call.core_registration = HostRegistration::make(*executor.device, core.view, what);
  return core.view.data;
}

void construct(ExecutorObject* storage, nb::object backbone,
               const runtime::decode::DecodeConfig& config, nb::handle group, nb::object device,
               nb::object attention, nb::object stream, int check_every, int64_t wait_ns,
               int compile_jobs, bool other_ranks_stood_in, bool dependent_launch, nb::object log) {
  // Built whole before the placement: an exception part-way must leave nothing half-made.
  ExecutorObject made;
  ExecutorObject* self = &made;
  BackboneObject& b = nb::cast<BackboneObject&>(backbone);
  if (!device.is_none()) {
    self->device = nb::cast<std::shared_ptr<DeviceHandle>>(device);
    if (b.device && !(*b.device == self->device->tensors)) {
      raise_refusal(absl::StrCat("SpecializedDecode: the weights are on ", device_text(*b.device),
                                 ", the device is ", device_text(self->device->tensors),
                                 "; hint: load the weights on the device"));
    }
  } else if (!b.device || b.device->type == 1) {
    self->device = make_cpu_handle();
  } else {
    self->device = make_gpu_handle(*b.device);
  }
  self->backbone = backbone;
  self->group = group_argument(group);
  self->attention = attention;
  self->config = b.backbone.config;
  self->dims = value(model::rank_dims(*b.backbone.config, b.backbone.tp, b.backbone.rank));
  runtime::decode::ExecutorOptions options;
  options.check_every = check_every;
  options.wait_ns = wait_ns;
  options.compile_jobs = compile_jobs;
  options.other_ranks_stood_in = other_ranks_stood_in;
  options.dependent_launch = dependent_launch;
  if (!log.is_none()) {
    options.log = [log](const std::string& line) {
      nb::gil_scoped_acquire gil;
      log(line);
    };
  }
  for (const auto& [layer, tensors] : b.backbone.weights) {
    for (const auto& [name, view] : tensors) {
      self->weight_registrations.push_back(HostRegistration::make(
          *self->device, view, absl::StrCat("layer ", layer, " weight \"", name, "\"")));
    }
  }
  self->decode =
      value(SpecializedDecode::create(b.backbone, config, *self->group.group, *self->device->device,
                                      jit::Jit::process_default(), std::move(options)));
  self->own_stream = value(self->device->device->create_stream());
  if (!stream.is_none()) {
    self->stream_source = stream;
  } else if (self->device->tensors.type != 1) {
    // torch's current stream on the executor's GPU (torch.cuda is HIP's too on ROCm).
    nb::object cuda = nb::module_::import_("torch.cuda");
    nb::object index = nb::int_(self->device->tensors.id);
    self->stream_source = nb::cpp_function(
        [cuda, index]() { return cuda.attr("current_stream")(index).attr("cuda_stream"); });
  }
  struct Keep {
    std::shared_ptr<DeviceHandle> device;  // outlives decode: its buffers are the device's
    std::shared_ptr<SpecializedDecode> decode;
  };
  self->output_owner = nb::capsule(new Keep{self->device, self->decode},
                                   [](void* keep) noexcept { delete static_cast<Keep*>(keep); });
  new (storage) ExecutorObject(std::move(made));
  // The hook reads the call in progress from the object where Python holds it.
  storage->attention_hook = [storage](int layer, const runtime::decode::LayerIo&,
                                      runtime::Stream&) {
    try {
      return call_attention(*storage, layer);
    } catch (nb::python_error& error) {
      return absl::StatusOr<runtime::DevicePtr>(absl::InternalError(
          absl::StrCat("layer ", layer, " attention raised: ", python_error_text(error))));
    }
  };
}

std::optional<StepObject> plan(nb::object self_object, nb::handle positions,
                               nb::handle intermediate_tensors, bool forward_context,
                               GraphMode graph_mode, nb::handle attn_metadata,
                               nb::handle kda_state) {
  ExecutorObject& self = nb::cast<ExecutorObject&>(self_object);
  StepInputs inputs;
  if (nb::isinstance<nb::int_>(positions)) {
    inputs.width = nb::cast<int>(positions);
  } else {
    const ImportedTensor p = import_tensor(positions, "plan: positions");
    if (p.view.shape.empty())
      raise_refusal("plan: positions is a scalar; expected the step's positions [..., width]");
    inputs.width = static_cast<int>(p.view.shape.back());
  }
  inputs.pipeline_stage_inputs = !intermediate_tensors.is_none();
  inputs.forward_context = forward_context;
  inputs.graph_mode = graph_mode;
  StepObject step;
  step.metadata = metadata_argument(attn_metadata, self.decode->kda_prefix(), step.metadata_owner);
  inputs.attn_metadata = step.metadata.get();
  TensorView state;
  if (!kda_state.is_none()) {
    state = import_tensor(kda_state, "plan: kda_state").view;
    inputs.kda_state = &state;
  }
  std::optional<runtime::decode::Step> planned = value(self.decode->plan(inputs));
  if (!planned) return std::nullopt;
  const SpecMetadataObject& meta = nb::cast<const SpecMetadataObject&>(step.metadata_owner);
  for (auto [name, tensor] : {std::pair{"spec_state_indices", meta.spec_state_indices},
                              std::pair{"num_accepted_tokens", meta.num_accepted_tokens}}) {
    if (tensor.is_valid() && !tensor.is_none()) {
      check_device(import_tensor(tensor, name), self.device->tensors,
                   absl::StrCat("attn_metadata ", name));
    }
  }
  const runtime::decode::SpecMetadata& views = step.metadata->begin()->second;
  for (auto [name, view] : {std::pair{"spec_state_indices", &views.spec_state_indices},
                            std::pair{"num_accepted_tokens", &views.num_accepted_tokens},
                            std::pair{"spec_query_start_loc", &views.spec_query_start_loc}}) {
    step.registrations.push_back(
        HostRegistration::make(*self.device, *view, absl::StrCat("attn_metadata ", name)));
  }
  step.stream = current_stream(self);
  step.executor_object = self_object;
  step.executor = &self;
  step.step = std::move(planned);
  return step;
}

}  // namespace

runtime::Stream current_stream(ExecutorObject& executor) {
  const uint64_t native = executor.stream_source.is_valid() && !executor.stream_source.is_none()
                              ? nb::cast<uint64_t>(executor.stream_source())
                              : executor.own_stream.native();
  return value(executor.device->device->wrap_stream(native));
}

void bind_executor(nb::module_& m) {
  nb::enum_<GraphMode>(m, "GraphMode",
                       "The step's CUDA-graph mode, as vLLM's forward context gives it.")
      .value("NONE", GraphMode::kNone)
      .value("PIECEWISE", GraphMode::kPiecewise)
      .value("FULL", GraphMode::kFull);

  nb::class_<LayerObject>(
      m, "LayerLaunch",
      "A served layer's launch in a planned step, with the seed's layer signature.")
      .def("__call__", &call_layer, nb::arg("positions"), nb::arg("prefix_sum"),
           nb::arg("block_residual"), nb::arg("prefix_delta").none(),
           nb::sig(
               "def __call__(self, positions: object, prefix_sum: object, block_residual: object, "
               "prefix_delta: object | None) -> tuple[object, object, object]"),
           "Enqueues the layer on the step's stream: prefix_sum [width, H] and block_residual "
           "[width, blocks, H] "
           "(bf16) are updated in place and returned, `out` is this layer's MoE output, the next "
           "layer's "
           "prefix_delta (an executor buffer, valid until the launch of the layer after next). "
           "Refused before "
           "anything is enqueued: a tensor on another device, of another dtype or shape, strided "
           "or misaligned.")
      .def_prop_ro("layer", [](const LayerObject& l) { return l.layer; });

  nb::class_<StepObject>(
      m, "Step", "A step plan() accepted: `width` rows of whole uniform spec-verify requests.")
      .def_prop_ro("width", [](const StepObject& s) { return s.step->width(); })
      .def(
          "layer",
          [](nb::handle_t<StepObject> self_object, int layer) -> nb::object {
            // Called for every decoder layer of every step: no cast through the type registry,
            // the launch object built in place.
            StepObject& self = *nb::inst_ptr<StepObject>(self_object);
            std::optional<runtime::decode::LayerLaunch> launch = self.step->layer(layer);
            if (!launch) return nb::none();
            nb::object out = nb::inst_alloc(nb::type<LayerObject>());
            new (nb::inst_ptr<LayerObject>(out))
                LayerObject{nb::borrow(self_object), &self, std::move(launch), layer};
            nb::inst_mark_ready(out);
            return out;
          },
          nb::arg("layer"), nb::sig("def layer(self, layer: int) -> LayerLaunch | None"),
          "The launch replacing decoder layer `layer`, or None for the host's layer.");

  nb::class_<ExecutorObject>(
      m, "SpecializedDecode",
      "The executor: the rank's KDA layers (K1 then K2) and the FFN half of its MLA layers "
      "(K2 after the host's attention) as persistent layer kernels, for the spec-verify "
      "steps plan() accepts.")
      .def("__init__", &construct, nb::arg("backbone"), nb::arg("config"), nb::arg("group"),
           nb::kw_only(), nb::arg("device").none() = nb::none(),
           nb::arg("attention").none() = nb::none(), nb::arg("stream").none() = nb::none(),
           nb::arg("check_every") = 16, nb::arg("wait_ns") = 0, nb::arg("compile_jobs") = 0,
           nb::arg("other_ranks_stood_in") = false, nb::arg("dependent_launch") = false,
           nb::arg("log").none() = nb::none(),
           nb::sig("def __init__(self, backbone: Backbone, config: DecodeConfig, group: object, *, "
                   "device: Device | None = None, attention: object | None = None, "
                   "stream: object | None = None, check_every: int = 16, wait_ns: int = 0, "
                   "compile_jobs: int = 0, "
                   "other_ranks_stood_in: bool = False, dependent_launch: bool = False, "
                   "log: object | None = None) -> None"),
           "On every rank of `group` at the same point, once the weights are loaded: agrees on "
           "weight_reasons (ValueError on every rank when any refuses), then builds and compiles "
           "every kernel. `device`: by default the weights' (the CPU interpreter for CPU "
           "tensors). `attention(layer, positions, prefix_sum, block_residual, prefix_delta) -> "
           "core`: the host's half of an MLA layer (fold the delta into prefix_sum in place, "
           "AttnRes, attention up to o_proj's input). `stream() -> int`: the native handle of the "
           "stream to enqueue on, read by plan (the step's launches go there), prepare_kv and "
           "after_step; by default torch.cuda.current_stream() on a GPU (so that "
           "torch.cuda.CUDAGraph captures the step), the executor's own stream on the CPU. "
           "`log(line)`: construction's summary. "
           "`other_ranks_stood_in`: benchmarks' one-rank runs at TP > 1 only (the other ranks' "
           "partial sums are zero: not the layer's outputs). `dependent_launch`: K1 and K2 "
           "start on the SMs the previous kernel frees and bring their first weights into L2 "
           "before they wait for its end (programmatic dependent launch on NVIDIA sm_90+; off "
           "until measured).")
      .def(
          "prepare_kv",
          [](ExecutorObject& self, const std::vector<nb::object>& caches) {
            std::vector<runtime::decode::KdaCache> views;
            std::vector<HostRegistration> registrations;
            for (const nb::object& object : caches) {
              const KdaCacheObject& c = nb::cast<const KdaCacheObject&>(object);
              check_device({c.cache.conv, c.device, false}, self.device->tensors,
                           absl::StrCat("KV cache \"", c.cache.layer, "\""));
              views.push_back(c.cache);
              registrations.push_back(
                  HostRegistration::make(*self.device, c.cache.conv,
                                         absl::StrCat("KV cache \"", c.cache.layer, "\" conv")));
              registrations.push_back(HostRegistration::make(
                  *self.device, c.cache.recurrent,
                  absl::StrCat("KV cache \"", c.cache.layer, "\" recurrent")));
            }
            self.caches.clear();
            self.cache_registrations.clear();
            runtime::Stream stream = current_stream(self);
            check(self.decode->prepare_kv(views, stream));
            self.caches = caches;
            self.cache_registrations = std::move(registrations);
          },
          nb::arg("caches"), nb::sig("def prepare_kv(self, caches: list[KdaCache]) -> None"),
          "After every KV-cache bind, on every rank: checks and binds every KDA layer's states "
          "(ValueError on every "
          "rank when any refuses); an empty list or empty states bind nothing.")
      .def("plan", &plan, nb::arg("positions"), nb::arg("intermediate_tensors").none() = nb::none(),
           nb::kw_only(), nb::arg("forward_context") = true,
           nb::arg("graph_mode") = GraphMode::kNone, nb::arg("attn_metadata").none() = nb::none(),
           nb::arg("kda_state").none() = nb::none(),
           nb::sig(
               "def plan(self, positions: object, intermediate_tensors: object | None = None, *, "
               "forward_context: bool = True, graph_mode: GraphMode = ..., "
               "attn_metadata: dict[str, SpecMetadata] | None = None, kda_state: object | None = "
               "None) "
               "-> Step | None"),
           "The seed's plan: None (the host's layers run) or a Step. `positions`: the step's "
           "positions (its last "
           "dimension is the width) or the width; `kda_state`: the recurrent state bound to the "
           "first KDA layer now. "
           "RuntimeError for a KV cache re-bound without prepare_kv.")
      .def(
          "after_step",
          [](ExecutorObject& self, bool capturing) {
            runtime::Stream stream = current_stream(self);
            check(self.decode->after_step(stream, capturing));
          },
          nb::arg("capturing") = false,
          "Once per executed step on every rank (vLLM: compute_logits): the fail-stop vote; "
          "RuntimeError on every "
          "rank once any rank's kernel gave up a wait. Nothing while capturing a graph.")
      .def(
          "check_health", [](const ExecutorObject& self) { check(self.decode->check_health()); },
          "Reads every health record now (synchronous): RuntimeError naming each wait that gave "
          "up.")
      .def(
          "synchronize",
          [](ExecutorObject& self) {
            runtime::Stream stream = current_stream(self);
            check(self.device->device->synchronize(stream));
          },
          "Waits for the executor's current stream.")
      .def_prop_ro(
          "kda_prefix", [](const ExecutorObject& self) { return self.decode->kda_prefix(); },
          "The name plan routes on: the first KDA layer's attention ('model.layers.1.self_attn').")
      .def(
          "attention_name",
          [](const ExecutorObject& self, int layer) { return self.decode->attention_name(layer); },
          nb::arg("layer"),
          "Decoder layer `layer`'s attention as the backbone names it: the key of its attention "
          "metadata and its KdaCache.")
      .def_prop_ro("config", [](const ExecutorObject& self) { return self.decode->config(); })
      .def_prop_ro("device", [](const ExecutorObject& self) { return self.device; })
      .def_prop_ro(
          "stats",
          [](const ExecutorObject& self) {
            const runtime::decode::ExecutorStats& s = self.decode->stats();
            nb::dict d;
            d["layers"] = s.layers;
            d["whole_layers"] = s.whole_layers;
            d["ffn_layers"] = s.ffn_layers;
            d["widths"] = s.widths;
            d["builds"] = s.builds;
            d["compiled"] = s.compiled;
            d["seconds"] = s.seconds;
            return d;
          },
          "What construction built: layers, whole_layers, ffn_layers, widths, builds, compiled, "
          "seconds.");
}

}  // namespace monotile::python
