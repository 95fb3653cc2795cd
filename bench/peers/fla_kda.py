"""fla's fused_recurrent_kda (flash-linear-attention / fla-core 0.6.0) in its speculative-verify form.

The public `fla.ops.kda.fused_recurrent_kda` does not forward state indices or accepted counts
(it always calls the forward with inplace_final_state=False), so the peer calls the forward it
wraps, `fla.ops.kda.fused_recurrent.fused_recurrent_kda_fwd`, as vLLM's K3 path does: varlen rows
(cu_seqlens), continuous batching (ssm_state_indices [N, q]), num_accepted_tokens, in-place state
writes, V-first state, gate / beta sigmoid / q-k l2norm inside the kernel, lower bound -5.
"""

from __future__ import annotations

import torch

from bench.kda_inputs import KdaInputs
from bench.kda_reference import LOWER_BOUND


def fla_version() -> str | None:
    """fla's version, or None when it cannot be imported."""
    try:
        import fla
        import fla.ops.kda.fused_recurrent  # noqa: F401  (the module the peer calls)
    except Exception:  # any import failure means the peer is absent
        return None
    return getattr(fla, "__version__", "unknown")


def fla_kda_verify(inputs: KdaInputs, state: torch.Tensor, out: torch.Tensor) -> None:
    """One verify step: reads and writes `state` in place, writes `out` [T, H, V] bf16."""
    from fla.ops.kda.fused_recurrent import fused_recurrent_kda_fwd

    t, h, d = inputs.q.shape
    fused_recurrent_kda_fwd(
        q=inputs.q.view(1, t, h, d),
        k=inputs.k.view(1, t, h, d),
        v=inputs.v.view(1, t, h, d),
        g=inputs.g.view(1, t, h, d),
        beta=inputs.beta.view(1, t, h),
        A_log=inputs.a_log,
        dt_bias=inputs.dt_bias,
        initial_state=state,
        scale=d ** -0.5,
        inplace_final_state=True,
        state_v_first=True,
        cu_seqlens=inputs.query_start,
        ssm_state_indices=inputs.state_indices,
        num_accepted_tokens=inputs.num_accepted,
        use_qk_l2norm_in_kernel=True,
        use_gate_in_kernel=True,
        use_beta_sigmoid_in_kernel=True,
        lower_bound=LOWER_BOUND,
        out=out.view(1, t, h, d),
    )
