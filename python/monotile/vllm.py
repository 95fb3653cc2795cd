"""What a vLLM model state needs to drive monotile's executor, read from vLLM's objects by attribute
name. Nothing here imports vLLM, and torch only where a torch object is handed in, so the module
works (and is tested) with stand-ins.

- ``decode_options(vllm_config, model=, device=, kda_state_dtypes=)``: the DecodeOptions of a
  ``VllmConfig``, every setting the seed's config check reads, by attribute name.
- ``backbone(model, config, tp=, rank=)``: the rank's weights from a torch module's named parameters,
  in vLLM's names and merged layouts (``language_model.model.layers.N.…`` or ``model.layers.N.…``;
  ``block_sparse_moe.experts.routed_experts.w13_weight`` is the executor's
  ``block_sparse_moe.experts.w13_weight``).
- ``Group(process_group)``: a monotile group over a torch.distributed CPU (gloo) group, vLLM's
  ``get_tp_group().cpu_group``.
- ``spec_metadata(m)``: a ``SpecMetadata`` from vLLM's GDN attention metadata.
- ``plan_arguments(kda_prefix, forward_context, kda_state)``: the forward-context fields plan reads
  (whether a context is available, the graph mode, the routing layer's metadata).
- ``SpecializedDecode``: the executor with the seed's vLLM-facing calls: ``prepare_kv()`` reads the
  KDA layers' ``kv_cache``, ``plan(positions, intermediate_tensors)`` the forward context,
  ``after_step()`` whether torch is capturing a graph.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable

import monotile

_LAYER_PARAMETER = re.compile(r"^(?P<prefix>(?:.*\.)?layers\.)(?P<layer>\d+)\.(?P<name>.+)$")


def _get(obj: Any, path: str, default: Any = None) -> Any:
    for name in path.split("."):
        if obj is None:
            return default
        obj = getattr(obj, name, None)
    return default if obj is None else obj


def _name(value: Any) -> str:
    return getattr(value, "name", str(value)).upper()


def decode_options(
    vllm_config: Any,
    *,
    model: monotile.ModelConfig | None,
    device: monotile.DeviceFacts,
    kda_state_dtypes: tuple[str, str] = ("BF16", "F32"),
) -> monotile.DecodeOptions:
    """The deployment of a ``VllmConfig`` as ``specialized_decode_config`` takes it: the settings
    the seed's config check reads, each by vLLM's attribute name (a missing one is vLLM's default).
    ``kda_state_dtypes``: the (conv, recurrent) KDA state dtypes vLLM chose
    (``MambaStateDtypeCalculator.kda_state_dtype``), as "BF16" / "F32"; ``device``: the GPU's facts
    (``monotile.device_facts``, with what the host knows of partitioning)."""
    o = monotile.DecodeOptions()
    additional = _get(vllm_config, "additional_config")
    o.decode_backend = additional.get("decode_backend", "auto") if isinstance(additional, dict) else "auto"
    parallel = _get(vllm_config, "parallel_config")
    o.tensor_parallel_size = _get(parallel, "tensor_parallel_size", 1)
    o.pipeline_parallel_size = _get(parallel, "pipeline_parallel_size", 1)
    o.data_parallel_size = _get(parallel, "data_parallel_size", 1)
    o.enable_expert_parallel = bool(_get(parallel, "enable_expert_parallel", False))
    o.enable_eplb = bool(_get(parallel, "enable_eplb", False))
    o.decode_context_parallel_size = _get(parallel, "decode_context_parallel_size", 1)
    o.prefill_context_parallel_size = _get(parallel, "prefill_context_parallel_size", 1)
    o.use_ubatching = bool(_get(parallel, "use_ubatching", False))
    o.lora = _get(vllm_config, "lora_config") is not None
    transfer = _get(vllm_config, "kv_transfer_config")
    if transfer is not None:
        o.kv_transfer_config = monotile.KvTransferConfig(
            kv_connector=_get(transfer, "kv_connector", ""),
            kv_connector_module_path=_get(transfer, "kv_connector_module_path"),
            kv_role=_get(transfer, "kv_role", ""),
        )
    o.enable_return_routed_experts = bool(
        _get(vllm_config, "aux_output_config.enable_return_routed_experts", False)
    )
    o.enable_sleep_mode = bool(_get(vllm_config, "model_config.enable_sleep_mode", False))
    o.cpu_offload_gb = float(_get(vllm_config, "offload_config.uva.cpu_offload_gb", 0))
    o.offload_group_size = int(_get(vllm_config, "offload_config.prefetch.offload_group_size", 0))
    o.weight_transfer = _get(vllm_config, "weight_transfer_config") is not None
    spec = _get(vllm_config, "speculative_config")
    o.num_speculative_tokens = None if spec is None else spec.num_speculative_tokens
    o.enable_adaptive_verification = bool(_get(spec, "enable_adaptive_verification", False))
    dynamic = _get(spec, "uses_dynamic_speculative_decoding")
    o.dynamic_speculative_decoding = bool(dynamic()) if callable(dynamic) else bool(dynamic)
    o.conv_state_dtype, o.recurrent_state_dtype = kda_state_dtypes
    o.use_replayssm = bool(_get(vllm_config, "cache_config.use_replayssm", False))
    o.use_kda_recoverssm = bool(_get(vllm_config, "cache_config.use_kda_recoverssm", False))
    o.use_v2_model_runner = bool(_get(vllm_config, "use_v2_model_runner", True))
    compile_mode = _name(_get(vllm_config, "compilation_config.mode", "NONE"))
    o.stock_torch_compile = compile_mode == "STOCK_TORCH_COMPILE"
    mode = _name(_get(vllm_config, "compilation_config.cudagraph_mode", "NONE"))
    if mode not in monotile.CudaGraphMode.__members__:
        raise ValueError(
            f"compilation_config.cudagraph_mode {mode!r}: expected one of "
            f"{', '.join(monotile.CudaGraphMode.__members__)}"
        )
    o.cudagraph_mode = monotile.CudaGraphMode.__members__[mode]
    o.model = model
    o.device = device
    return o


def parameter_name(name: str) -> str:
    """vLLM's parameter name relative to its layer, as the executor names it: the routed experts'
    ``experts.routed_experts.`` is ``experts.``, and the compressed-tensors method's
    ``w13_weight_packed`` / ``w2_weight_packed`` are ``w13_weight`` / ``w2_weight``."""
    name = name.replace("experts.routed_experts.", "experts.")
    if name.endswith("_weight_packed"):
        name = name[: -len("_packed")]
    return name


def _tensor(parameter: Any) -> Any:
    # A parameter that requires grad cannot cross DLPack; detach() is a view of the same memory.
    return parameter.detach() if hasattr(parameter, "detach") else parameter


def backbone(
    model: Any,
    config: monotile.ModelConfig,
    *,
    tp: int,
    rank: int,
    start_layer: int | None = None,
    end_layer: int | None = None,
    experts_layout: str = "",
) -> monotile.Backbone:
    """The rank's Backbone from ``model.named_parameters()`` (the causal LM, its ``model`` or the
    multimodal wrapper: any prefix before ``layers.N.``, which becomes the Backbone's
    ``layers_prefix``). The layer range defaults to the module's ``start_layer`` / ``end_layer``
    (vLLM's pipeline range), else every decoder layer; MTP layers (past num_hidden_layers) are never
    part of it. Tensors are passed as they are: a re-laid or strided one is refused by
    weight_reasons, never copied. ``experts_layout``: what the MoE method holds in the MXFP4
    experts' tensors, "checkpoint" when it keeps the checkpoint's bytes (the only layout the kernels
    read; a method that re-lays them keeps their shapes, so this cannot be seen from the tensors);
    left empty, weight_reasons refuses it as not declared."""
    inner = getattr(model, "model", model)
    start = start_layer if start_layer is not None else getattr(inner, "start_layer", 0)
    end = end_layer if end_layer is not None else getattr(inner, "end_layer", config.num_hidden_layers)
    end = min(end, config.num_hidden_layers)
    weights: dict[int, dict[str, Any]] = {}
    layers_prefix = ""
    for name, parameter in model.named_parameters():
        match = _LAYER_PARAMETER.match(name)
        if match is None:
            continue
        layers_prefix = match["prefix"][:-1]
        layer = int(match["layer"])
        if start <= layer < end:
            weights.setdefault(layer, {})[parameter_name(match["name"])] = _tensor(parameter)
    return monotile.Backbone(config, tp, rank, start, end, weights, layers_prefix=layers_prefix,
                             experts_layout=experts_layout)


class Group:
    """A monotile group over a torch.distributed process group: vLLM's TP CPU group
    (``get_tp_group().cpu_group``, gloo). Every rank calls ``all_gather`` at the same point."""

    def __init__(self, process_group: Any):
        import torch.distributed as dist

        self._dist = dist
        self._group = process_group
        self._rank = dist.get_rank(process_group)
        self._size = dist.get_world_size(process_group)

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return self._size

    def all_gather(self, data: bytes) -> list[bytes]:
        gathered: list[Any] = [None] * self._size
        self._dist.all_gather_object(gathered, bytes(data), group=self._group)
        return [bytes(entry) for entry in gathered]


def spec_metadata(metadata: Any) -> monotile.SpecMetadata:
    """The fields of vLLM's ``GDNAttentionMetadata`` that plan and the kernels read, by name:
    ``spec_sequence_masks`` (present or None), ``num_prefills``, ``num_decodes``,
    ``num_spec_decodes``, ``uniform_spec_sequence_length``, ``spec_state_indices_tensor``,
    ``num_accepted_tokens``, ``spec_query_start_loc``."""
    return monotile.SpecMetadata(
        spec_sequence_masks=getattr(metadata, "spec_sequence_masks", None) is not None,
        num_prefills=metadata.num_prefills,
        num_decodes=metadata.num_decodes,
        num_spec_decodes=metadata.num_spec_decodes,
        uniform_spec_sequence_length=getattr(metadata, "uniform_spec_sequence_length", None),
        spec_state_indices=getattr(metadata, "spec_state_indices_tensor", None),
        num_accepted_tokens=getattr(metadata, "num_accepted_tokens", None),
        spec_query_start_loc=getattr(metadata, "spec_query_start_loc", None),
    )


def graph_mode(mode: Any) -> monotile.GraphMode:
    """vLLM's ``CUDAGraphMode`` (an enum, read by its name: NONE, PIECEWISE, FULL) as a GraphMode;
    None is NONE."""
    if mode is None:
        return monotile.GraphMode.NONE
    name = getattr(mode, "name", str(mode)).upper()
    try:
        return monotile.GraphMode.__members__[name]
    except KeyError:
        raise ValueError(
            f"forward context: cudagraph_runtime_mode {name!r}: expected NONE, PIECEWISE or FULL"
        ) from None


def plan_arguments(kda_prefix: str, forward_context: Any, kda_state: Any) -> dict[str, Any]:
    """The keyword arguments of ``SpecializedDecode.plan`` from vLLM's forward context (None: no
    context is available): its ``cudagraph_runtime_mode`` and, of its ``attn_metadata`` (a dict by
    layer name; a list under dual-batch overlap, which is "no metadata"), the routing layer's entry
    alone, the only one plan and the launches read."""
    if forward_context is None:
        return {"forward_context": False, "kda_state": kda_state}
    metadata = forward_context.attn_metadata
    if isinstance(metadata, dict):
        entry = metadata.get(kda_prefix)
        metadata = {} if entry is None else {kda_prefix: spec_metadata(entry)}
    else:
        metadata = None
    return {
        "forward_context": True,
        "graph_mode": graph_mode(getattr(forward_context, "cudagraph_runtime_mode", None)),
        "attn_metadata": metadata,
        "kda_state": kda_state,
    }


def mla_attention(layers: Any, apply_attn_res: Callable[..., Any]) -> Callable[..., Any]:
    """The host's half of an MLA layer as the executor calls it (the seed's FfnLayer): vLLM's
    AttnRes (``apply_attn_res``: vLLM's ``_apply_attn_res``, which folds the pending delta into
    prefix_sum in place) over the layer's modules, then its MLA attention up to o_proj's input."""

    def attention(layer: int, positions: Any, prefix_sum: Any, block_residual: Any, prefix_delta: Any) -> Any:
        module = layers[layer]
        hidden = apply_attn_res(
            prefix_sum,
            block_residual,
            module.self_attention_res_proj,
            module.self_attention_res_norm,
            module.prev_valid_blocks,
            delta=prefix_delta,
            output_norm=module.input_layernorm,
            quant_key=module.self_attn.get_input_quant_key(),
        )
        return module.self_attn.mla_attn.forward(positions, hidden, skip_o_proj=True)

    return attention


def _capturing() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())


class SpecializedDecode:
    """monotile.SpecializedDecode with the seed's calls as vLLM makes them.

    ``model``: the backbone module (``KimiLinearModel``: ``layers``, ``start_layer``,
    ``end_layer``, ``named_parameters()``). ``group``: vLLM's TP CPU group (a torch.distributed
    group) or any monotile group. ``forward_context``: returns vLLM's forward context, or None when
    none is available (vLLM: ``get_forward_context() if is_forward_context_available() else None``).
    ``apply_attn_res``: vLLM's ``_apply_attn_res``, for the MLA layers' host half (or give
    ``attention`` directly)."""

    def __init__(
        self,
        model: Any,
        config: monotile.DecodeConfig,
        *,
        model_config: monotile.ModelConfig,
        tp: int,
        rank: int,
        group: Any,
        forward_context: Callable[[], Any],
        apply_attn_res: Callable[..., Any] | None = None,
        attention: Callable[..., Any] | None = None,
        device: monotile.Device | None = None,
        log: Callable[[str], None] | None = None,
        experts_layout: str = "",
    ):
        self.model = model
        self._forward_context = forward_context
        if not isinstance(group, monotile.Group) and not hasattr(group, "all_gather"):
            group = Group(group)
        if attention is None and apply_attn_res is not None:
            attention = mla_attention(model.layers, apply_attn_res)
        self.backbone = backbone(model, model_config, tp=tp, rank=rank, experts_layout=experts_layout)
        self.decode = monotile.SpecializedDecode(
            self.backbone, config, group, device=device, attention=attention, log=log
        )
        self._config = model_config
        self._kda_layers = [
            i
            for i in range(self.backbone.start_layer, self.backbone.end_layer)
            if model_config.served_kind(i) == "whole"
        ]

    @property
    def kda_prefix(self) -> str:
        return self.decode.kda_prefix

    def _kv_caches(self) -> Iterable[tuple[int, Any]]:
        for i in self._kda_layers:
            yield i, getattr(self.model.layers[i].self_attn, "kv_cache", None)

    def kda_state(self) -> Any:
        """The recurrent state bound to the first KDA layer now (the seed's KV key), or None."""
        for _, kv_cache in self._kv_caches():
            if isinstance(kv_cache, (list, tuple)) and len(kv_cache) == 2 and _numel(kv_cache[1]) > 0:
                return kv_cache[1]
            return None
        return None

    def prepare_kv(self) -> None:
        """After every KV-cache bind (vLLM: ``ModelState.initialize_kv_cache``): every served KDA
        layer's ``self_attn.kv_cache`` (conv_state, recurrent_state); nothing bound yet (the
        profiling run) binds nothing."""
        if self.kda_state() is None:
            self.decode.prepare_kv([])
            return
        caches = [
            monotile.KdaCache(self.decode.attention_name(i), kv_cache[0], kv_cache[1])
            for i, kv_cache in self._kv_caches()
            if isinstance(kv_cache, (list, tuple)) and len(kv_cache) == 2
        ]
        self.decode.prepare_kv(caches)

    def plan(self, positions: Any, intermediate_tensors: Any) -> monotile.Step | None:
        """The seed's plan, in forward: a Step (``step.layer(i)`` per decoder layer) or None."""
        arguments = plan_arguments(self.decode.kda_prefix, self._forward_context(), self.kda_state())
        return self.decode.plan(positions, intermediate_tensors, **arguments)

    def after_step(self) -> None:
        """Once per executed step (vLLM: ``compute_logits``): the fail-stop vote."""
        self.decode.after_step(_capturing())


def _numel(tensor: Any) -> int:
    if tensor is None:
        return 0
    numel = getattr(tensor, "numel", None)
    if callable(numel):
        return int(numel())
    return int(getattr(tensor, "size", 0))
