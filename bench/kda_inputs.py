"""Inputs of one KDA spec-verify step, as the model hands them to the recurrence, and their bytes.

Layout: q, k, v, g [T, H, 128] bf16 with T = N * q request-major; beta [T, H] bf16 (raw); a_log [H]
and dt_bias [H * 128] f32; state f32 V-first [slots, H, V, K], slot 0 the null block; state_indices
[N, q] int32 (column t receives the state after token t); num_accepted [N] int32 in 1..q. Requests
past `valid` are padding: every slot 0 and one accepted token, as FULL-graph padding makes them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

HEAD_DIM = 128
STATE_BYTES = 4  # fp32 state


@dataclass
class KdaInputs:
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    g: torch.Tensor
    beta: torch.Tensor
    a_log: torch.Tensor
    dt_bias: torch.Tensor
    state: torch.Tensor
    state_indices: torch.Tensor
    num_accepted: torch.Tensor
    query_start: torch.Tensor  # [N + 1] int32: request n's rows are query_start[n] .. query_start[n+1]
    valid: int  # requests 0..valid-1 are real, the rest padding

    @property
    def requests(self) -> int:
        return self.state_indices.shape[0]

    @property
    def q_len(self) -> int:
        return self.state_indices.shape[1]

    @property
    def heads(self) -> int:
        return self.q.shape[1]


def make_kda_inputs(
    requests: int,
    heads: int,
    q_len: int = 4,
    padded: int = 0,
    head_dim: int = HEAD_DIM,
    slot_pad_heads: int = 0,
    device: str | torch.device = "cuda",
    seed: int = 0,
) -> KdaInputs:
    """Random inputs for `requests` real requests plus `padded` padding ones.

    Slots 1.. are dealt to the real requests in a random order. slot_pad_heads > 0 gives the state
    a slot stride larger than H * V * K (a view of a wider buffer), as a kernel must read the stride
    from the tensor. Slots that the step will write start as NaN, so an unwritten one is caught.
    """
    gen = torch.Generator().manual_seed(seed)
    n = requests + padded
    t = n * q_len

    def randn(*shape: int, std: float = 1.0) -> torch.Tensor:
        return torch.randn(*shape, generator=gen) * std

    slots = 1 + requests * q_len
    wide = torch.empty((slots, heads + slot_pad_heads, head_dim, head_dim), dtype=torch.float32)
    state = wide[:, :heads]
    state.copy_(randn(slots, heads, head_dim, head_dim, std=0.1))
    order = torch.randperm(requests * q_len, generator=gen) + 1
    indices = torch.zeros((n, q_len), dtype=torch.int32)
    indices[:requests] = order.view(requests, q_len).to(torch.int32)
    accepted = torch.ones(n, dtype=torch.int32)
    accepted[:requests] = torch.randint(1, q_len + 1, (requests,), generator=gen, dtype=torch.int32)
    for r in range(requests):
        read = int(indices[r, accepted[r] - 1])
        for c in range(q_len):
            if int(indices[r, c]) != read:
                state[int(indices[r, c])] = float("nan")
    inputs = KdaInputs(
        q=randn(t, heads, head_dim).to(torch.bfloat16),
        k=randn(t, heads, head_dim).to(torch.bfloat16),
        v=randn(t, heads, head_dim).to(torch.bfloat16),
        g=randn(t, heads, head_dim).to(torch.bfloat16),
        beta=randn(t, heads).to(torch.bfloat16),
        a_log=randn(heads, std=0.5),
        dt_bias=randn(heads * head_dim, std=0.5),
        state=state,
        state_indices=indices,
        num_accepted=accepted,
        query_start=torch.arange(0, t + 1, q_len, dtype=torch.int32),
        valid=requests,
    )
    return to_device(inputs, device)


def to_device(inputs: KdaInputs, device: str | torch.device) -> KdaInputs:
    """Moves every tensor, keeping the state's slot stride (the wide buffer moves whole)."""
    moved = {}
    for name, value in vars(inputs).items():
        if name == "state":
            base = value._base if value._base is not None else value
            wide = base.to(device)
            moved[name] = wide.as_strided(value.shape, value.stride(), value.storage_offset())
        elif isinstance(value, torch.Tensor):
            moved[name] = value.to(device)
        else:
            moved[name] = value
    return KdaInputs(**moved)


def clone_state(state: torch.Tensor) -> torch.Tensor:
    """A copy with the same strides (so a padded slot stride stays padded)."""
    base = state._base if state._base is not None else state
    wide = base.clone()
    return wide.as_strided(state.shape, state.stride(), state.storage_offset())


def compulsory_bytes(requests: int, heads: int, q_len: int, head_dim: int = HEAD_DIM) -> int:
    """One state read and q state writes per request and head, plus q/k/v/g/o (bf16 [T, H, D]),
    beta (bf16 [T, H]), a_log and dt_bias (f32), state_indices and num_accepted (int32)."""
    tokens = requests * q_len
    state = requests * heads * (1 + q_len) * head_dim * head_dim * STATE_BYTES
    activations = 5 * tokens * heads * head_dim * 2 + tokens * heads * 2
    params = heads * 4 + heads * head_dim * 4
    metadata = requests * q_len * 4 + requests * 4
    return state + activations + params + metadata


def as_numpy(tensor: torch.Tensor) -> np.ndarray:
    """float64 numpy of a tensor's values (bf16 converts exactly)."""
    return tensor.detach().to("cpu", torch.float64).numpy() if tensor.is_floating_point() else tensor.cpu().numpy()
