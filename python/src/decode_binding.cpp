// The host-side checks as Python sees them, with the seed's names: ModelConfig, DecodeOptions and
// specialized_decode_config, DecodeConfig, Backbone and weight_reasons, KdaCache and cache_reasons,
// SpecMetadata and step_reason.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "absl/strings/str_cat.h"
#include "model/config.h"
#include "python/src/bindings.h"
#include "python/src/executor_object.h"
#include "python/src/status_errors.h"
#include "runtime/decode/cache_reasons.h"
#include "runtime/decode/decode_config.h"
#include "runtime/decode/step_plan.h"
#include "runtime/decode/weight_reasons.h"
#include "support/strings.h"

namespace monotile::python {
namespace {

using runtime::decode::AttnMetadata;
using runtime::decode::DecodeConfig;
using runtime::decode::DecodeOptions;
using runtime::decode::DeviceFacts;

model::Dtype dtype_argument(const std::string& name, std::string_view what) {
  std::optional<model::Dtype> dtype = model::dtype_from_name(name);
  if (!dtype)
    raise_refusal(absl::StrCat(to_absl(what), ": unknown dtype \"", name,
                               "\"; expected a safetensors name such as \"BF16\" or \"F32\""));
  return *dtype;
}

// DecodeOptions with its model kept alive.
struct DecodeOptionsObject {
  DecodeOptions options;
  nb::object model;
};

ImportedTensor optional_view(nb::handle object, std::string_view what, nb::object& owner,
                             std::optional<TensorDevice>& device) {
  if (object.is_none()) return {};
  ImportedTensor t = import_tensor(object, what);
  owner = nb::borrow(object);
  if (!device) device = t.device;
  return t;
}

}  // namespace

// The routing layer's metadata of a dict {layer name: SpecMetadata} (the only entry plan and the
// launches read), or nothing for None.
std::unique_ptr<AttnMetadata> metadata_argument(nb::handle attn_metadata,
                                                const std::string& kda_prefix, nb::object& owner) {
  if (attn_metadata.is_none()) return nullptr;
  if (!nb::isinstance<nb::dict>(attn_metadata)) {
    raise_refusal(absl::StrCat(
        "attn_metadata: expected a dict of layer name to monotile.SpecMetadata or None, found ",
        nb::type_name(attn_metadata.type()).c_str()));
  }
  auto out = std::make_unique<AttnMetadata>();
  PyObject* entry = PyDict_GetItemString(attn_metadata.ptr(), kda_prefix.c_str());
  if (entry != nullptr) {
    SpecMetadataObject* meta = nullptr;
    if (!nb::try_cast(nb::handle(entry), meta) || meta == nullptr) {
      raise_refusal(absl::StrCat(
          "attn_metadata[\"", kda_prefix, "\"]: expected a monotile.SpecMetadata, found ",
          nb::type_name(nb::handle(entry).type()).c_str(),
          "; hint: monotile.vllm.spec_metadata(m) reads vLLM's GDN attention metadata"));
    }
    out->emplace(kda_prefix, meta->meta);
    owner = nb::borrow(entry);
  }
  return out;
}

namespace {

// A plain DecodeOptions field as a read-write property of the same name.
template <typename T>
void option(nb::class_<DecodeOptionsObject>& c, const char* name, T DecodeOptions::*member) {
  c.def_prop_rw(
      name, [member](const DecodeOptionsObject& o) { return o.options.*member; },
      [member](DecodeOptionsObject& o, T v) { o.options.*member = v; });
}

}  // namespace

void bind_decode_checks(nb::module_& m) {
  nb::class_<model::ModelConfig>(m, "ModelConfig",
                                 "A Kimi-K3 config (config.json, or the embedded k3 and k3-tiny).")
      .def_ro("hidden_size", &model::ModelConfig::hidden_size)
      .def_ro("num_hidden_layers", &model::ModelConfig::num_hidden_layers)
      .def_ro("attn_res_block_size", &model::ModelConfig::attn_res_block_size)
      .def_ro("kda_num_heads", &model::ModelConfig::kda_num_heads)
      .def_ro("kda_head_dim", &model::ModelConfig::kda_head_dim)
      .def_ro("num_attention_heads", &model::ModelConfig::num_attention_heads)
      .def_ro("v_head_dim", &model::ModelConfig::v_head_dim)
      .def_ro("num_experts", &model::ModelConfig::num_experts)
      .def_ro("num_experts_per_token", &model::ModelConfig::num_experts_per_token)
      .def("block_count", &model::ModelConfig::block_count, "AttnRes blocks of the whole model.")
      .def("is_kda_layer", &model::ModelConfig::is_kda_layer, nb::arg("layer"))
      .def(
          "served_kind",
          [](const model::ModelConfig& c, int layer) {
            const model::ServedKind kind = c.served_kind(layer);
            return kind == model::ServedKind::kNone ? std::string("none")
                                                    : std::string(model::served_kind_name(kind));
          },
          nb::arg("layer"),
          "How the executor serves decoder layer `layer`: 'whole' (KDA), 'ffn' (MLA) or 'none'.")
      .def("__repr__", [](const model::ModelConfig& c) {
        return absl::StrCat("<monotile.ModelConfig ", c.num_hidden_layers, " layers, hidden ",
                            c.hidden_size, ">");
      });
  m.def(
      "load_config",
      [](const std::string& name_or_dir) { return value(model::load_config(name_or_dir)); },
      nb::arg("name_or_dir"),
      "An embedded config ('k3', 'k3-tiny') or a checkpoint folder's config.json.");
  m.def(
      "parse_config",
      [](const std::string& json, const std::string& where) {
        return value(model::parse_config(json, where));
      },
      nb::arg("json"), nb::arg("where") = "config.json",
      "A config.json's text; `where` names it in messages.");

  nb::class_<DeviceFacts>(m, "DeviceFacts",
                          "What the resident-grid requirement needs of the device.")
      .def(nb::init<>())
      .def(
          "__init__",
          [](DeviceFacts* self, int compute_units, bool partitioned, bool thread_per_program) {
            new (self) DeviceFacts{compute_units, partitioned, thread_per_program};
          },
          nb::kw_only(), nb::arg("compute_units") = 0, nb::arg("partitioned") = false,
          nb::arg("thread_per_program") = false)
      .def_rw("compute_units", &DeviceFacts::compute_units)
      .def_rw("partitioned", &DeviceFacts::partitioned)
      .def_rw("thread_per_program", &DeviceFacts::thread_per_program);
  m.def(
      "device_facts",
      [](const DeviceHandle& device, bool partitioned) {
        return runtime::decode::device_facts(device.device->info(), partitioned);
      },
      nb::arg("device"), nb::arg("partitioned") = false,
      "The facts of a device; `partitioned` is what the host knows of MIG or CU masking.");

  nb::class_<runtime::decode::KvTransferConfig>(m, "KvTransferConfig", "vLLM's kv_transfer_config.")
      .def(
          "__init__",
          [](runtime::decode::KvTransferConfig* self, std::string kv_connector,
             std::optional<std::string> kv_connector_module_path, std::string kv_role) {
            new (self) runtime::decode::KvTransferConfig{
                std::move(kv_connector), std::move(kv_connector_module_path), std::move(kv_role)};
          },
          nb::arg("kv_connector"), nb::arg("kv_connector_module_path").none() = nb::none(),
          nb::arg("kv_role"))
      .def_rw("kv_connector", &runtime::decode::KvTransferConfig::kv_connector)
      .def_rw("kv_connector_module_path",
              &runtime::decode::KvTransferConfig::kv_connector_module_path)
      .def_rw("kv_role", &runtime::decode::KvTransferConfig::kv_role);
  nb::enum_<runtime::decode::CudaGraphMode>(m, "CudaGraphMode",
                                            "vLLM's compilation_config.cudagraph_mode.")
      .value("NONE", runtime::decode::CudaGraphMode::kNone)
      .value("PIECEWISE", runtime::decode::CudaGraphMode::kPiecewise)
      .value("FULL", runtime::decode::CudaGraphMode::kFull)
      .value("FULL_DECODE_ONLY", runtime::decode::CudaGraphMode::kFullDecodeOnly)
      .value("FULL_AND_PIECEWISE", runtime::decode::CudaGraphMode::kFullAndPiecewise);

  nb::class_<DecodeOptionsObject> options(
      m, "DecodeOptions",
      "The deployment as the host describes it, in vLLM's names (monotile.vllm.decode_options "
      "reads them from a VllmConfig).");
  options.def(nb::init<>())
      .def_prop_rw(
          "decode_backend", [](const DecodeOptionsObject& o) { return o.options.decode_backend; },
          [](DecodeOptionsObject& o, const std::string& v) { o.options.decode_backend = v; })
      .def_prop_rw(
          "tensor_parallel_size",
          [](const DecodeOptionsObject& o) { return o.options.tensor_parallel_size; },
          [](DecodeOptionsObject& o, int v) { o.options.tensor_parallel_size = v; })
      .def_prop_rw(
          "pipeline_parallel_size",
          [](const DecodeOptionsObject& o) { return o.options.pipeline_parallel_size; },
          [](DecodeOptionsObject& o, int v) { o.options.pipeline_parallel_size = v; })
      .def_prop_rw(
          "num_speculative_tokens",
          [](const DecodeOptionsObject& o) { return o.options.num_speculative_tokens; },
          [](DecodeOptionsObject& o, std::optional<int> v) {
            o.options.num_speculative_tokens = v;
          },
          nb::arg("value").none(), "None: no speculative decoding.")
      .def_prop_rw(
          "max_rows", [](const DecodeOptionsObject& o) { return o.options.max_rows; },
          [](DecodeOptionsObject& o, int v) { o.options.max_rows = v; })
      .def_prop_rw(
          "conv_state_dtype",
          [](const DecodeOptionsObject& o) {
            return std::string(model::dtype_name(o.options.conv_state_dtype));
          },
          [](DecodeOptionsObject& o, const std::string& v) {
            o.options.conv_state_dtype = dtype_argument(v, "conv_state_dtype");
          })
      .def_prop_rw(
          "recurrent_state_dtype",
          [](const DecodeOptionsObject& o) {
            return std::string(model::dtype_name(o.options.recurrent_state_dtype));
          },
          [](DecodeOptionsObject& o, const std::string& v) {
            o.options.recurrent_state_dtype = dtype_argument(v, "recurrent_state_dtype");
          })
      .def_prop_rw(
          "model", [](const DecodeOptionsObject& o) { return o.model; },
          [](DecodeOptionsObject& o, nb::object v) {
            o.options.model = v.is_none() ? nullptr : nb::cast<const model::ModelConfig*>(v);
            o.model = v;
          },
          nb::arg("value").none(), nb::sig("def model(self, value: ModelConfig | None, /) -> None"))
      .def_prop_rw(
          "other_ranks_stood_in",
          [](const DecodeOptionsObject& o) { return o.options.other_ranks_stood_in; },
          [](DecodeOptionsObject& o, bool v) { o.options.other_ranks_stood_in = v; },
          "The tools' one-rank runs only: this rank alone at TP > 1, the other ranks' partial sums "
          "stood in by zero.")
      .def_prop_rw(
          "device", [](const DecodeOptionsObject& o) { return o.options.device; },
          [](DecodeOptionsObject& o, const DeviceFacts& v) { o.options.device = v; })
      .def_prop_rw(
          "kv_transfer_config",
          [](const DecodeOptionsObject& o) { return o.options.kv_transfer_config; },
          [](DecodeOptionsObject& o, std::optional<runtime::decode::KvTransferConfig> v) {
            o.options.kv_transfer_config = std::move(v);
          },
          nb::arg("value").none(), "None: no KV transfer.")
      .def_prop_rw(
          "cudagraph_mode", [](const DecodeOptionsObject& o) { return o.options.cudagraph_mode; },
          [](DecodeOptionsObject& o, runtime::decode::CudaGraphMode v) {
            o.options.cudagraph_mode = v;
          });
  // The rest of vLLM's settings the seed's check reads, each a plain field of the same name.
  option(options, "data_parallel_size", &DecodeOptions::data_parallel_size);
  option(options, "enable_expert_parallel", &DecodeOptions::enable_expert_parallel);
  option(options, "enable_eplb", &DecodeOptions::enable_eplb);
  option(options, "decode_context_parallel_size", &DecodeOptions::decode_context_parallel_size);
  option(options, "prefill_context_parallel_size", &DecodeOptions::prefill_context_parallel_size);
  option(options, "use_ubatching", &DecodeOptions::use_ubatching);
  option(options, "lora", &DecodeOptions::lora);
  option(options, "enable_return_routed_experts", &DecodeOptions::enable_return_routed_experts);
  option(options, "enable_sleep_mode", &DecodeOptions::enable_sleep_mode);
  option(options, "cpu_offload_gb", &DecodeOptions::cpu_offload_gb);
  option(options, "offload_group_size", &DecodeOptions::offload_group_size);
  option(options, "weight_transfer", &DecodeOptions::weight_transfer);
  option(options, "enable_adaptive_verification", &DecodeOptions::enable_adaptive_verification);
  option(options, "dynamic_speculative_decoding", &DecodeOptions::dynamic_speculative_decoding);
  option(options, "use_replayssm", &DecodeOptions::use_replayssm);
  option(options, "use_kda_recoverssm", &DecodeOptions::use_kda_recoverssm);
  option(options, "use_v2_model_runner", &DecodeOptions::use_v2_model_runner);
  option(options, "stock_torch_compile", &DecodeOptions::stock_torch_compile);
  m.def(
      "deployment_warnings",
      [](const DecodeOptionsObject& o) { return runtime::decode::deployment_warnings(o.options); },
      nb::arg("options"),
      "What the specialized decode serves but not as asked, as the seed warns (PIECEWISE-only "
      "decode graphs); specialized_decode_config logs them.");

  nb::class_<DecodeConfig>(
      m, "DecodeConfig",
      "q rows per request and the launch widths (every multiple of q up to max_rows).")
      .def(
          "__init__",
          [](DecodeConfig* self, int q, int max_rows) {
            new (self) DecodeConfig{q, max_rows};
          },
          nb::arg("q") = 1, nb::arg("max_rows") = 16)
      .def_rw("q", &DecodeConfig::q)
      .def_rw("max_rows", &DecodeConfig::max_rows)
      .def_prop_ro("widths", &DecodeConfig::widths)
      .def("has_width", &DecodeConfig::has_width, nb::arg("width"))
      .def("__eq__", [](const DecodeConfig& a,
                        const DecodeConfig& b) { return a.q == b.q && a.max_rows == b.max_rows; })
      .def("__repr__", [](const DecodeConfig& c) {
        return absl::StrCat("DecodeConfig(q=", c.q, ", max_rows=", c.max_rows, ")");
      });

  m.def(
      "specialized_decode_config",
      [](const DecodeOptionsObject& options) {
        return value(runtime::decode::specialized_decode_config(options.options));
      },
      nb::arg("options"),
      "None for decode_backend 'auto' (the stock decode); else the DecodeConfig, or ValueError "
      "listing every "
      "setting the kernels cannot serve.");

  nb::class_<BackboneObject>(
      m, "Backbone",
      "The model as loaded on one rank: config, TP size and rank, the layer range, and the "
      "weights by layer and parameter name relative to the layer, read in place.")
      .def(
          "__init__",
          [](BackboneObject* self_storage, nb::object config, int tp, int rank, int start_layer,
             int end_layer, nb::dict weights, std::string layers_prefix,
             std::string experts_layout) {
            // Built whole before the placement: an exception part-way must leave nothing half-made.
            BackboneObject made;
            BackboneObject* self = &made;
            self->config = config;
            self->backbone.config = nb::cast<const model::ModelConfig*>(config);
            self->backbone.tp = tp;
            self->backbone.rank = rank;
            self->backbone.start_layer = start_layer;
            self->backbone.end_layer = end_layer;
            self->backbone.layers_prefix = std::move(layers_prefix);
            self->backbone.experts_layout = std::move(experts_layout);
            for (auto [layer_key, tensors] : weights) {
              const int layer = nb::cast<int>(layer_key);
              auto& by_name = self->backbone.weights[layer];
              for (auto [name_key, tensor] : nb::cast<nb::dict>(tensors)) {
                const std::string name = nb::cast<std::string>(name_key);
                ImportedTensor t =
                    import_tensor(tensor, absl::StrCat("layer ", layer, " weight \"", name, "\""));
                if (!self->device) self->device = t.device;
                check_device(t, *self->device,
                             absl::StrCat("layer ", layer, " weight \"", name, "\""));
                by_name[name] = t.view;
                self->tensors.push_back(nb::borrow(tensor));
              }
            }
            new (self_storage) BackboneObject(std::move(made));
          },
          nb::arg("config"), nb::arg("tp"), nb::arg("rank"), nb::arg("start_layer"),
          nb::arg("end_layer"), nb::arg("weights"), nb::kw_only(), nb::arg("layers_prefix") = "",
          nb::arg("experts_layout") = "",
          nb::sig("def __init__(self, config: ModelConfig, tp: int, rank: int, start_layer: int, "
                  "end_layer: int, "
                  "weights: dict[int, dict[str, object]], *, layers_prefix: str = '', "
                  "experts_layout: str = '') -> None"),
          "layers_prefix: the decoder layers' module prefix as vLLM names them, without the index "
          "('language_model.model.layers'; '' takes the config's). experts_layout: how the MXFP4 "
          "experts' bytes are held; the kernels read 'checkpoint' only (the checkpoint's bytes): "
          "anything else, or nothing declared, is refused by weight_reasons.")
      .def_prop_ro("config", [](const BackboneObject& b) { return b.config; })
      .def_prop_ro("tp", [](const BackboneObject& b) { return b.backbone.tp; })
      .def_prop_ro("rank", [](const BackboneObject& b) { return b.backbone.rank; })
      .def_prop_ro("start_layer", [](const BackboneObject& b) { return b.backbone.start_layer; })
      .def_prop_ro("end_layer", [](const BackboneObject& b) { return b.backbone.end_layer; })
      .def_prop_ro("layers_prefix",
                   [](const BackboneObject& b) { return b.backbone.layers_prefix; })
      .def_prop_ro("experts_layout",
                   [](const BackboneObject& b) { return b.backbone.experts_layout; })
      .def_prop_ro("tensor_count", [](const BackboneObject& b) { return b.tensors.size(); });
  m.def(
      "weight_reasons",
      [](const BackboneObject& b) { return runtime::decode::weight_reasons(b.backbone); },
      nb::arg("backbone"),
      "Every reason this rank's kernels cannot read the weights in place (empty: none).");

  nb::class_<KdaCacheObject>(m, "KdaCache",
                             "One KDA layer's (conv, recurrent) states as the host bound them.")
      .def(
          "__init__",
          [](KdaCacheObject* self, const std::string& layer, nb::object conv,
             nb::object recurrent) {
            ImportedTensor c = import_tensor(conv, absl::StrCat("KV cache \"", layer, "\" conv"));
            ImportedTensor r =
                import_tensor(recurrent, absl::StrCat("KV cache \"", layer, "\" recurrent"));
            check_device(r, c.device, absl::StrCat("KV cache \"", layer, "\" recurrent"));
            new (self) KdaCacheObject{{layer, c.view, r.view}, conv, recurrent, c.device};
          },
          nb::arg("layer"), nb::arg("conv"), nb::arg("recurrent"))
      .def_prop_ro("layer", [](const KdaCacheObject& c) { return c.cache.layer; })
      .def_prop_ro("conv", [](const KdaCacheObject& c) { return c.conv; })
      .def_prop_ro("recurrent", [](const KdaCacheObject& c) { return c.recurrent; });
  m.def(
      "cache_reasons",
      [](const std::vector<const KdaCacheObject*>& caches, const model::ModelConfig& config, int tp,
         int rank, int q) {
        std::vector<runtime::decode::KdaCache> views;
        for (const KdaCacheObject* c : caches) views.push_back(c->cache);
        const model::RankDims dims = value(model::rank_dims(config, tp, rank));
        return runtime::decode::cache_reasons(views, config, dims, q);
      },
      nb::arg("caches"), nb::arg("config"), nb::arg("tp"), nb::arg("rank"), nb::arg("q"),
      "Every reason the kernels cannot read these KDA states (empty: none).");

  nb::class_<SpecMetadataObject>(
      m, "SpecMetadata",
      "One layer's speculative-decode metadata: the fields of vLLM's GDN attention "
      "metadata that plan and the kernels read.")
      .def(
          "__init__",
          [](SpecMetadataObject* self, bool spec_sequence_masks, int num_prefills, int num_decodes,
             int num_spec_decodes, std::optional<int> uniform_spec_sequence_length,
             nb::handle spec_state_indices, nb::handle num_accepted_tokens,
             nb::handle spec_query_start_loc) {
            SpecMetadataObject made;
            SpecMetadataObject* self_storage = self;
            self = &made;
            self->meta.spec_sequence_masks = spec_sequence_masks;
            self->meta.num_prefills = num_prefills;
            self->meta.num_decodes = num_decodes;
            self->meta.num_spec_decodes = num_spec_decodes;
            self->meta.uniform_spec_sequence_length = uniform_spec_sequence_length;
            self->meta.spec_state_indices = optional_view(spec_state_indices, "spec_state_indices",
                                                          self->spec_state_indices, self->device)
                                                .view;
            self->meta.num_accepted_tokens =
                optional_view(num_accepted_tokens, "num_accepted_tokens", self->num_accepted_tokens,
                              self->device)
                    .view;
            self->meta.spec_query_start_loc =
                optional_view(spec_query_start_loc, "spec_query_start_loc",
                              self->spec_query_start_loc, self->device)
                    .view;
            new (self_storage) SpecMetadataObject(std::move(made));
          },
          nb::kw_only(), nb::arg("spec_sequence_masks") = false, nb::arg("num_prefills") = 0,
          nb::arg("num_decodes") = 0, nb::arg("num_spec_decodes") = 0,
          nb::arg("uniform_spec_sequence_length").none() = nb::none(),
          nb::arg("spec_state_indices").none() = nb::none(),
          nb::arg("num_accepted_tokens").none() = nb::none(),
          nb::arg("spec_query_start_loc").none() = nb::none(),
          nb::sig("def __init__(self, *, spec_sequence_masks: bool = False, num_prefills: int = 0, "
                  "num_decodes: int = 0, "
                  "num_spec_decodes: int = 0, uniform_spec_sequence_length: int | None = None, "
                  "spec_state_indices: object | None = None, num_accepted_tokens: object | None = "
                  "None, "
                  "spec_query_start_loc: object | None = None) -> None"))
      .def_prop_ro("spec_sequence_masks",
                   [](const SpecMetadataObject& s) { return s.meta.spec_sequence_masks; })
      .def_prop_ro("num_prefills", [](const SpecMetadataObject& s) { return s.meta.num_prefills; })
      .def_prop_ro("num_decodes", [](const SpecMetadataObject& s) { return s.meta.num_decodes; })
      .def_prop_ro("num_spec_decodes",
                   [](const SpecMetadataObject& s) { return s.meta.num_spec_decodes; })
      .def_prop_ro("uniform_spec_sequence_length",
                   [](const SpecMetadataObject& s) { return s.meta.uniform_spec_sequence_length; })
      .def_prop_ro("spec_state_indices",
                   [](const SpecMetadataObject& s) { return s.spec_state_indices; })
      .def_prop_ro("num_accepted_tokens",
                   [](const SpecMetadataObject& s) { return s.num_accepted_tokens; })
      .def_prop_ro("spec_query_start_loc",
                   [](const SpecMetadataObject& s) { return s.spec_query_start_loc; });

  m.def(
      "step_reason",
      [](nb::handle attn_metadata, const std::string& kda_prefix,
         int width) -> std::optional<std::string> {
        nb::object owner;
        std::unique_ptr<AttnMetadata> metadata =
            metadata_argument(attn_metadata, kda_prefix, owner);
        std::optional<std::string_view> reason =
            runtime::decode::step_reason(metadata.get(), kda_prefix, width);
        if (!reason) return std::nullopt;
        return std::string(*reason);
      },
      nb::arg("attn_metadata").none(), nb::arg("kda_prefix"), nb::arg("width"),
      nb::sig("def step_reason(attn_metadata: dict[str, SpecMetadata] | None, kda_prefix: str, "
              "width: int) -> str | None"),
      "None when the metadata is a pure spec-verify step of whole uniform requests filling `width` "
      "rows; else "
      "the first reason: 'no metadata', 'not spec-verify', 'not pure decode', 'not uniform'.");
}

}  // namespace monotile::python
