"""The tests' k3-tiny on rank 0 of TP 1, in numpy (bf16 as uint16 bits): seeded weights as vLLM
names and lays them out, KDA caches, one spec-verify step's metadata and residual stream, and the
host's half of an MLA layer as a stand-in. The float64 check of a layer is monotile.testing's."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

import monotile

SEED = 5
Q = 2
MAX_ROWS = 4
SLOTS = 2 * Q * 2 + 3


def bf16_bits(values: np.ndarray) -> np.ndarray:
    """float64 values rounded once to bf16 (nearest even), as uint16 bits."""
    values = np.asarray(values, dtype=np.float64)
    mantissa, exponent = np.frexp(values)
    rounded = np.ldexp(np.round(mantissa * 256.0) / 256.0, exponent).astype(np.float32)
    return (rounded.view(np.uint32) >> 16).astype(np.uint16)


def bf16_values(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def random_bf16(rng: np.random.Generator, shape, scale: float) -> np.ndarray:
    return bf16_bits(rng.normal(0.0, scale, size=shape))


class K3Tiny:
    """k3-tiny's config and rank-0 weights, made once per test module (they take a few seconds)."""

    def __init__(self) -> None:
        self.config = monotile.load_config("k3-tiny")
        self.weights = monotile.testing.seeded_rank_weights(self.config, 1, 0, SEED, 0, self.config.num_hidden_layers)
        c = self.config
        self.hidden = c.hidden_size
        self.blocks = c.block_count()
        self.kda_heads = c.kda_num_heads
        self.channels = 3 * c.kda_num_heads * c.kda_head_dim
        self.mla_core = c.num_attention_heads * c.v_head_dim
        self.kda_layers = [i for i in range(c.num_hidden_layers) if c.served_kind(i) == "whole"]
        self.served = [i for i in range(c.num_hidden_layers) if c.served_kind(i) != "none"]

    def backbone(self, start: int = 0, end: int | None = None, weights=None) -> monotile.Backbone:
        end = self.config.num_hidden_layers if end is None else end
        return monotile.Backbone(self.config, 1, 0, start, end, self.weights if weights is None else weights,
                                 layers_prefix="model.layers", experts_layout="checkpoint")

    def caches(self, rng: np.random.Generator, layers=None) -> dict[int, SimpleNamespace]:
        """Each KDA layer's states: conv channels-last [slots, q + 2, 3 Pl] bf16, recurrent f32."""
        out = {}
        for layer in self.kda_layers if layers is None else layers:
            out[layer] = SimpleNamespace(
                conv=random_bf16(rng, (SLOTS, Q + 2, self.channels), 1.0),
                state=rng.normal(0.0, 0.1, size=(SLOTS, self.kda_heads, 128, 128)).astype(np.float32),
            )
        return out

    @staticmethod
    def kda_caches(caches: dict[int, SimpleNamespace], prefix: str = "model.layers") -> list[monotile.KdaCache]:
        return [monotile.KdaCache(f"{prefix}.{layer}.self_attn", c.conv, c.state) for layer, c in caches.items()]

    def step(self, rng: np.random.Generator, requests: int) -> SimpleNamespace:
        """One step's tensors: every position its own slot, fresh prefix, blocks and delta."""
        width = requests * Q
        slots = rng.permutation(np.arange(1, SLOTS, dtype=np.int32))[:width]
        s = SimpleNamespace(requests=requests, width=width)
        s.indices = slots.reshape(requests, Q).copy()
        s.accepted = rng.integers(1, Q + 1, size=requests, dtype=np.int32)
        s.starts = (np.arange(requests + 1, dtype=np.int32) * Q).copy()
        s.positions = np.arange(width, dtype=np.int64)
        s.prefix = random_bf16(rng, (width, self.hidden), 1.0)
        s.blocks = random_bf16(rng, (width, self.blocks, self.hidden), 1.0)
        s.delta = random_bf16(rng, (width, self.hidden), 0.5)
        return s

    @staticmethod
    def metadata(s: SimpleNamespace, **fields) -> monotile.SpecMetadata:
        values = dict(
            spec_sequence_masks=True,
            num_spec_decodes=s.requests,
            uniform_spec_sequence_length=Q,
            spec_state_indices=s.indices,
            num_accepted_tokens=s.accepted,
            spec_query_start_loc=s.starts,
        )
        values.update(fields)
        return monotile.SpecMetadata(**values)


class MlaStandIn:
    """The host's half of an MLA layer for the tests: folds the delta into prefix_sum in place and
    returns a random o_proj input, remembered for the check."""

    def __init__(self, tiny: K3Tiny, rng: np.random.Generator):
        self.tiny, self.rng, self.calls, self.core = tiny, rng, [], None

    def __call__(self, layer, positions, prefix_sum, block_residual, prefix_delta):
        self.calls.append(layer)
        prefix_sum[...] = bf16_bits(bf16_values(prefix_sum) + bf16_values(prefix_delta))
        self.core = random_bf16(self.rng, (prefix_sum.shape[0], self.tiny.mla_core), 1.0)
        return self.core
