"""monotile: the Kimi-K3 specialized decode for a Python host.

The executor ``SpecializedDecode`` replaces a rank's KDA decoder layers and the FFN half of its MLA
layers with persistent layer kernels on pure spec-verify steps, and leaves every other step to the
host's layers. The calls, in the seed's order::

    config = monotile.specialized_decode_config(options)        # before any weight exists
    decode = monotile.SpecializedDecode(backbone, config, group)  # once the weights are loaded
    decode.prepare_kv(caches)                                     # after every KV-cache bind
    step = decode.plan(positions, intermediate_tensors, ...)      # per forward: a Step or None
    out = (step.layer(i) or layer)(positions, prefix_sum, block_residual, prefix_delta)
    decode.after_step()                                           # once per executed step

Tensors cross by DLPack (torch, numpy), read and written in place: nothing is copied, and a tensor
the kernels cannot read as it is (strided, misaligned, another dtype or device) is refused with the
library's message. Refusals raise ValueError, faults RuntimeError. ``monotile.vllm`` maps vLLM's
objects onto these, duck-typed; ``python -m monotile`` is the ``monotile`` command line.
"""

from monotile._monotile import (
    Backbone,
    CudaGraphMode,
    DecodeConfig,
    DecodeOptions,
    Device,
    DeviceFacts,
    GraphMode,
    Group,
    KdaCache,
    KvTransferConfig,
    LayerLaunch,
    ModelConfig,
    SpecializedDecode,
    SpecMetadata,
    Step,
    __version__,
    agree,
    cache_reasons,
    cpu_device,
    deployment_warnings,
    device_facts,
    gpu_device,
    launch_counting_device,
    load_config,
    parse_config,
    single_process_group,
    specialized_decode_config,
    step_reason,
    testing,
    weight_reasons,
)

__all__ = [
    "Backbone",
    "CudaGraphMode",
    "DecodeConfig",
    "DecodeOptions",
    "Device",
    "DeviceFacts",
    "GraphMode",
    "Group",
    "KdaCache",
    "KvTransferConfig",
    "LayerLaunch",
    "ModelConfig",
    "SpecializedDecode",
    "SpecMetadata",
    "Step",
    "__version__",
    "agree",
    "cache_reasons",
    "cpu_device",
    "deployment_warnings",
    "device_facts",
    "gpu_device",
    "launch_counting_device",
    "load_config",
    "parse_config",
    "single_process_group",
    "specialized_decode_config",
    "step_reason",
    "testing",
    "weight_reasons",
]
