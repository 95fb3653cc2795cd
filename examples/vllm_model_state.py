"""Where each hook of monotile's executor goes in vLLM's Kimi-K3 model, as the seed places them
(hooks.py on the causal LM, model_state.py on the model runner's state):

    __init__             specialized_decode_config(options), before any weight is allocated
    model state __init__ build the executor, once the weights are loaded
    initialize_kv_cache  prepare_kv, after every KV-cache bind (the profiling cache, then the real one)
    forward              plan(positions, intermediate_tensors): a Step, or None for the stock forward
    the layer loop       (step.layer(i) or layer)(positions, prefix_sum, block_residual, prefix_delta)
    compute_logits       after_step, the fail-stop vote

Run directly, it drives k3-tiny on the CPU interpreter with stand-ins for vLLM's objects (the
decoder layers the executor does not serve, the forward context, the TP group): one prefill step,
which the stock layers run, then spec-verify steps, which the kernels run. In vLLM, the classes
below are KimiLinearForCausalLM (with the hooks), KimiLinearModel and KimiK3ModelState, and the
stand-ins are vLLM's own objects.
"""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import numpy as np

import monotile
import monotile.vllm


# ---- The hooks on the causal LM (the seed's SpecializedDecodeMixin, hooks.py) ----------------------
class SpecializedDecodeHooks:
    def init_specialized_decode(self, config: monotile.DecodeConfig | None) -> None:
        """In __init__, after the config check (which runs before any module allocates weights)."""
        self.specialized_decode_config = config
        self.specialized_decode = None

    def build_specialized_decode(self) -> None:
        """Called by the model state once the weights are loaded (before memory profiling and graph
        capture: every kernel is compiled here)."""
        self.specialized_decode = monotile.vllm.SpecializedDecode(
            self.model,
            self.specialized_decode_config,
            model_config=self.model_config,
            tp=self.tp_size,
            rank=self.tp_rank,
            group=self.tp_group,  # vLLM: get_tp_group().cpu_group
            forward_context=self.forward_context,  # vLLM: get_forward_context() if is_forward_context_available()
            apply_attn_res=self.apply_attn_res,  # vLLM: linear._apply_attn_res
            log=print,
            # What the MoE method holds in the MXFP4 experts' tensors: the kernels read the
            # checkpoint's bytes only (docs/decode.md, "The experts' layout").
            experts_layout="checkpoint",
        )

    def plan_specialized_decode(self, positions, intermediate_tensors):
        decode = self.specialized_decode
        return None if decode is None else decode.plan(positions, intermediate_tensors)

    def after_specialized_decode_step(self) -> None:
        if self.specialized_decode is not None:
            self.specialized_decode.after_step()


# ---- The model (KimiLinearForCausalLM.forward / compute_logits, KimiLinearModel.forward) -------------
class KimiLinearForCausalLM(SpecializedDecodeHooks):
    def __init__(self, options: monotile.DecodeOptions, model, model_config, tp_group, forward_context):
        self.init_specialized_decode(monotile.specialized_decode_config(options))
        self.model, self.model_config = model, model_config
        self.tp_size, self.tp_rank, self.tp_group = 1, 0, tp_group
        self.forward_context = forward_context
        self.apply_attn_res = StandInAttnRes()

    def forward(self, positions, intermediate_tensors, hidden_states):
        step = self.plan_specialized_decode(positions, intermediate_tensors)
        return self.model.forward(positions, hidden_states, step)

    def compute_logits(self, hidden_states):
        self.after_specialized_decode_step()
        return hidden_states  # vLLM: the final norm and the LM head


class KimiLinearModel:
    """The decoder layer loop with AttnRes, in the deferred-delta form."""

    def __init__(self, layers, blocks: int):
        self.layers, self.blocks = layers, blocks
        self.start_layer, self.end_layer = 0, len(layers)
        self.served = []  # the layers a kernel ran, for the printout

    def named_parameters(self):
        for layer in self.layers:
            yield from layer.named_parameters()

    def forward(self, positions, hidden_states, step):
        prefix_sum = hidden_states
        block_residual = np.zeros((hidden_states.shape[0], self.blocks, hidden_states.shape[1]), np.uint16)
        prefix_delta = None
        self.served = []
        for layer_idx, layer in enumerate(self.layers[self.start_layer:self.end_layer], start=self.start_layer):
            kernel = step.layer(layer_idx) if step is not None else None
            if kernel is not None:
                self.served.append(layer_idx)
            prefix_sum, block_residual, prefix_delta = (kernel or layer)(
                positions, prefix_sum, block_residual, prefix_delta)
        return prefix_sum, prefix_delta


# ---- The model runner's state (the seed's KimiK3ModelState, model_state.py) --------------------------
class KimiK3ModelState:
    def __init__(self, model: KimiLinearForCausalLM):
        # vLLM: super().__init__(...); the language model of a multimodal wrapper.
        self.language_model = model
        if model.specialized_decode_config is not None:
            model.build_specialized_decode()

    def initialize_kv_cache(self, kv_caches: dict[int, tuple]) -> None:
        # vLLM: super().initialize_kv_cache(...) binds every layer's self_attn.kv_cache.
        for layer, kv_cache in kv_caches.items():
            self.language_model.model.layers[layer].self_attn.kv_cache = kv_cache
        decode = self.language_model.specialized_decode
        if decode is not None:
            decode.prepare_kv()


# ---- Stand-ins for vLLM's objects ------------------------------------------------------------------
def bf16(values) -> np.ndarray:
    mantissa, exponent = np.frexp(np.asarray(values, dtype=np.float64))
    rounded = np.ldexp(np.round(mantissa * 256.0) / 256.0, exponent).astype(np.float32)
    return (rounded.view(np.uint32) >> 16).astype(np.uint16)


def values(bits) -> np.ndarray:
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


class StandInDecoderLayer:
    """A decoder layer as the stock forward runs it (here: folds the pending delta into the prefix
    and returns a small new delta), holding its parameters under vLLM's names."""

    def __init__(self, index: int, parameters: dict, rng: np.random.Generator, config):
        self.index, self.parameters, self.rng = index, parameters, rng
        self.self_attn = SimpleNamespace(kv_cache=None, mla_attn=StandInMla(rng, config),
                                         get_input_quant_key=lambda: None)
        self.self_attention_res_proj = self.self_attention_res_norm = self.input_layernorm = None
        self.prev_valid_blocks = config.block_count()

    def named_parameters(self):
        for name, tensor in self.parameters.items():
            # vLLM's names: the routed experts sit under experts.routed_experts.
            yield f"model.layers.{self.index}.{name.replace('block_sparse_moe.experts.', 'block_sparse_moe.experts.routed_experts.')}", tensor

    def __call__(self, positions, prefix_sum, block_residual, prefix_delta):
        if prefix_delta is not None:
            prefix_sum[...] = bf16(values(prefix_sum) + values(prefix_delta))
        return prefix_sum, block_residual, bf16(self.rng.normal(0.0, 0.5, size=prefix_sum.shape))


class StandInAttnRes:
    """vLLM's _apply_attn_res as far as the executor relies on it: the delta folded into prefix_sum
    in place; the AttnRes output goes to the attention."""

    def __call__(self, prefix_sum, block_residual, proj, norm, blocks, *, delta, output_norm, quant_key):
        prefix_sum[...] = bf16(values(prefix_sum) + values(delta))
        return prefix_sum


class StandInMla:
    def __init__(self, rng, config):
        self.rng, self.columns = rng, config.num_attention_heads * config.v_head_dim

    def forward(self, positions, hidden_states, skip_o_proj):
        assert skip_o_proj, "the executor runs o_proj itself (K2)"
        return bf16(self.rng.normal(0.0, 1.0, size=(hidden_states.shape[0], self.columns)))


class StandInGroup:
    """vLLM's TP CPU group at TP 1 (monotile.vllm.Group wraps a real torch.distributed group)."""

    def rank(self):
        return 0

    def size(self):
        return 1

    def all_gather(self, data):
        return [data]


def gdn_metadata(kind: str, requests: int, q: int, slots: np.ndarray) -> SimpleNamespace:
    """The fields of vLLM's GDNAttentionMetadata that plan and the kernels read."""
    spec = kind == "spec-verify"
    return SimpleNamespace(
        num_prefills=0 if spec else requests,
        num_decodes=0,
        num_spec_decodes=requests if spec else 0,
        spec_sequence_masks=np.ones(requests, bool) if spec else None,
        uniform_spec_sequence_length=q if spec else None,
        spec_state_indices_tensor=slots.reshape(requests, q) if spec else None,
        num_accepted_tokens=np.full(requests, q, np.int32) if spec else None,
        spec_query_start_loc=(np.arange(requests + 1, dtype=np.int32) * q) if spec else None,
    )


def digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:12]


def main() -> None:
    rng = np.random.default_rng(7)
    config = monotile.load_config("k3-tiny")
    q, requests, slots = 2, 2, 11

    options = monotile.DecodeOptions()
    options.decode_backend = "latency_specialized"
    options.num_speculative_tokens = q - 1
    options.max_rows = 8
    options.model = config
    options.device = monotile.device_facts(monotile.cpu_device())

    # Loading: vLLM fills the parameters; here, seeded weights in vLLM's per-rank layouts.
    weights = monotile.testing.seeded_rank_weights(config, 1, 0, 5, 0, config.num_hidden_layers)
    layers = [StandInDecoderLayer(i, weights.get(i, {}), rng, config) for i in range(config.num_hidden_layers)]
    context = SimpleNamespace(attn_metadata=None, cudagraph_runtime_mode=SimpleNamespace(name="NONE"))
    model = KimiLinearForCausalLM(options, KimiLinearModel(layers, config.block_count()), config, StandInGroup(),
                                  lambda: context)
    print(f"__init__: specialized_decode_config -> {model.specialized_decode_config}")

    state = KimiK3ModelState(model)  # builds the executor: its summary line above
    decode = model.specialized_decode
    print(f"model state: built after load, routing on {decode.kda_prefix!r}")

    kda_layers = [i for i in range(config.num_hidden_layers) if config.served_kind(i) == "whole"]
    channels = 3 * config.kda_num_heads * config.kda_head_dim
    state.initialize_kv_cache({i: (np.zeros((0, q + 2, channels), np.uint16),
                                   np.zeros((0, config.kda_num_heads, 128, 128), np.float32)) for i in kda_layers})
    print("initialize_kv_cache (memory profiling): prepare_kv bound nothing")
    state.initialize_kv_cache({i: (bf16(rng.normal(size=(slots, q + 2, channels))),
                                   rng.normal(0.0, 0.1, size=(slots, config.kda_num_heads, 128, 128)).astype(np.float32))
                               for i in kda_layers})
    print(f"initialize_kv_cache: prepare_kv bound {len(kda_layers)} KDA layers' caches")

    names = [f"model.layers.{i}.self_attn" for i in range(config.num_hidden_layers)]
    for number, kind in enumerate(["prefill", "spec-verify", "spec-verify"], start=1):
        width = requests * q
        chosen = rng.permutation(np.arange(1, slots, dtype=np.int32))[:width]
        context.attn_metadata = {name: gdn_metadata(kind, requests, q, chosen) for name in names}
        positions = np.arange(width, dtype=np.int64)
        hidden = bf16(rng.normal(size=(width, config.hidden_size)))
        prefix, out = model.forward(positions, None, hidden)
        model.compute_logits(prefix)
        served = model.model.served
        how = (f"kernels for layers {served[0]}-{served[-1]} ({len(served)}), the host's for the rest"
               if served else "plan None: every layer the host's")
        print(f"step {number} ({kind}, {requests} requests, width {width}): {how}; after_step in compute_logits; "
              f"outputs {digest(prefix, out)}")


if __name__ == "__main__":
    main()
