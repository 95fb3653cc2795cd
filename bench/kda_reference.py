"""Float64 reference of the KDA speculative-verify recurrence (k3_layer.md sections 4.3 and 4.4),
in numpy so that it runs and is tested on a CPU.

Per request n (q tokens each, request-major rows): the initial state is the slot in column
num_accepted[n] - 1 of state_indices; slot <= 0 there means no state: every output row of the
request is zero and nothing is read or stored. Otherwise, per token t, with the gate, beta and
l2-normalized q/k computed in float64:
  S *= exp(gate_t) (per key column); e = (v_t - S k_t) * beta_t; S += e k_t^T; o_t = S q_t;
and S is stored to the slot in column t when that slot is > 0. State is V-first: [slots, H, V, K].
All initial states are read before any state is written (slots of distinct requests never overlap).
"""

from __future__ import annotations

import numpy as np

LOWER_BOUND = -5.0
L2NORM_EPS = 1e-6


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def l2normalize(x: np.ndarray, eps: float = L2NORM_EPS) -> np.ndarray:
    """x / sqrt(sum(x^2) + eps) over the last axis."""
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)


def kda_gate(g: np.ndarray, a_log: np.ndarray, dt_bias: np.ndarray, lower_bound: float = LOWER_BOUND) -> np.ndarray:
    """Log-decay per (token, head, key channel): lb * sigmoid(exp(A_log[h]) * (g + dt_bias[h, k])).

    g [T, H, K]; a_log [H]; dt_bias [H * K] (or [H, K]). Returns values in (lb, 0).
    """
    t, h, k = g.shape
    return lower_bound * _sigmoid(np.exp(a_log)[None, :, None] * (g + np.reshape(dt_bias, (h, k))[None]))


def kda_verify_reference(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    g: np.ndarray,
    beta: np.ndarray,
    a_log: np.ndarray,
    dt_bias: np.ndarray,
    state: np.ndarray,
    state_indices: np.ndarray,
    num_accepted: np.ndarray,
    lower_bound: float = LOWER_BOUND,
    scale: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Returns (o [T, H, V], the state after the step [slots, H, V, K]), both float64.

    q, k, g [T, H, K]; v [T, H, V]; beta [T, H] raw (sigmoid applied here); a_log [H];
    dt_bias [H * K]; state [slots, H, V, K]; state_indices [N, q] ints; num_accepted [N] in 1..q.
    The inputs are taken as exact (pass the bf16 values the kernels see); the result is not
    rounded to bf16.
    """
    q, k, v, g, beta = (np.asarray(a, dtype=np.float64) for a in (q, k, v, g, beta))
    n_requests, q_len = state_indices.shape
    tokens, heads, key_dim = q.shape
    if tokens != n_requests * q_len:
        raise ValueError(f"kda reference: T = {tokens} tokens, expected N * q = {n_requests} * {q_len}")
    if scale is None:
        scale = key_dim ** -0.5
    qn = l2normalize(q) * scale
    kn = l2normalize(k)
    decay = np.exp(kda_gate(g, np.asarray(a_log, np.float64), np.asarray(dt_bias, np.float64), lower_bound))
    b = _sigmoid(beta)
    initial = np.asarray(state, dtype=np.float64)
    after = initial.copy()
    o = np.zeros_like(v)
    for n in range(n_requests):
        accepted = int(num_accepted[n])
        if not 1 <= accepted <= q_len:
            raise ValueError(f"kda reference: num_accepted[{n}] = {accepted}, expected 1..{q_len}")
        first = int(state_indices[n, accepted - 1])
        if first <= 0:
            continue  # no state: zero output, nothing read or stored
        s = initial[first].copy()  # [H, V, K]
        for t in range(q_len):
            row = n * q_len + t
            s *= decay[row][:, None, :]
            e = (v[row] - np.einsum("hvk,hk->hv", s, kn[row])) * b[row][:, None]
            s += e[:, :, None] * kn[row][:, None, :]
            o[row] = np.einsum("hvk,hk->hv", s, qn[row])
            slot = int(state_indices[n, t])
            if slot > 0:
                after[slot] = s
    return o, after
