"""What a vLLM model state needs to drive monotile's executor, read from vLLM's objects by attribute
name. Nothing here imports vLLM, and torch only where a torch object is handed in, so the module
works (and is tested) with stand-ins.

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
_KDA_PREFIX = re.compile(r"^(?P<layers>.*layers\.)\d+\.self_attn$")


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
) -> monotile.Backbone:
    """The rank's Backbone from ``model.named_parameters()`` (the causal LM, its ``model`` or the
    multimodal wrapper: any prefix before ``layers.N.``). The layer range defaults to the module's
    ``start_layer`` / ``end_layer`` (vLLM's pipeline range), else every decoder layer; MTP layers
    (past num_hidden_layers) are never part of it. Tensors are passed as they are: a re-laid or
    strided one is refused by weight_reasons, never copied."""
    inner = getattr(model, "model", model)
    start = start_layer if start_layer is not None else getattr(inner, "start_layer", 0)
    end = end_layer if end_layer is not None else getattr(inner, "end_layer", config.num_hidden_layers)
    end = min(end, config.num_hidden_layers)
    weights: dict[int, dict[str, Any]] = {}
    for name, parameter in model.named_parameters():
        match = _LAYER_PARAMETER.match(name)
        if match is None:
            continue
        layer = int(match["layer"])
        if start <= layer < end:
            weights.setdefault(layer, {})[parameter_name(match["name"])] = _tensor(parameter)
    return monotile.Backbone(config, tp, rank, start, end, weights)


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
    ):
        self.model = model
        self._forward_context = forward_context
        if not isinstance(group, monotile.Group) and not hasattr(group, "all_gather"):
            group = Group(group)
        if attention is None and apply_attn_res is not None:
            attention = mla_attention(model.layers, apply_attn_res)
        self.backbone = backbone(model, model_config, tp=tp, rank=rank)
        self.decode = monotile.SpecializedDecode(
            self.backbone, config, group, device=device, attention=attention, log=log
        )
        self._config = model_config
        names = _KDA_PREFIX.match(self.decode.kda_prefix)
        self._layer_names = names["layers"] if names else "model.layers."
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
            monotile.KdaCache(f"{self._layer_names}{i}.self_attn", kv_cache[0], kv_cache[1])
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
