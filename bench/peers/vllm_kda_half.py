"""vLLM 0.33.0's stock KDA half on SM90, as its decoder layer and KimiK3DeltaAttention run it in a
speculative decode step: vLLM's own kernels from its wheel, called as its code calls them.

Per step (vllm/models/kimi_k3/nvidia/model.py `_pre_attn_norm`, kda.py `forward` and `_forward`'s
spec-decode branch, read for facts; the calls below are written here):
  attn_res (Triton `_attn_res_kernel`: its native op is SM100 only): the delta folded into the prefix
    in place, the softmax mix of the layer's block and the prefix, input_layernorm -> x;
  in_proj: x W_in^T, W_in [6288, 7168] (q | k | v | g2 | f_a | beta | pad), through F.linear (cuBLAS);
  f_b: f_a W_fb^T, F.linear (cuBLAS), -> the raw gate g1;
  causal_conv1d_update (Triton) on q | k | v, a strided view of the projection: the conv state in the
    channels-last layout viewed (..., dim, state), the slot in column 0 of the state indices (slot 0,
    NULL_BLOCK_ID, skipped), the window at num_accepted - 1, SiLU, into a fresh tensor;
  fused_recurrent_kda (Triton; gate, beta's sigmoid and the q / k l2norm inside the kernel, lower
    bound -5) from the state at the accepted column, the state after token t stored to column t, the
    output into core [1, T, NHl, 128];
  FusedRMSNormGated(128, sigmoid) (Triton `layer_norm_gated_fwd_kernel`, in place on core, gate g2);
  o_proj: core W_o^T, F.linear (cuBLAS) -> the rank's partial [T, 7168].
This is the cuBLAS form of the projections. Inside a full CUDA graph at 1 <= T <= 14 vLLM 0.33.0 on
SM90 runs `run_kda_projection_overlap` instead (q | k | v | g2 through torch.mm, or at T <= 2 a CuTe
DSL skinny GEMM, while CuTe DSL kernels do f_a | beta and f_b on a second stream), and its SM90 table
sends o_proj at T <= 2 and f_b at T <= 8 to CuTe DSL / vLLM's compiled `dsv3_fused_a_gemm`; those
need the nvidia-cutlass-dsl wheels or vLLM's compiled extension, which the GPU machine has not
(docs/bench.md says why they cannot travel). At T = 16 the cuBLAS form is what vLLM runs.

The layers, metadata and check are the unfused path's (bench/tables/kda_half.py): the same inputs,
float64 references and tolerances; the recurrence's output is snapshotted for the check before the
gated norm overwrites it. A second check, with N >= 2, pads the last request (slot 0 everywhere, one
accepted token): the conv update and the recurrence must then leave slot 0 of both states untouched
and the real requests' rows must still match.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from bench.kda_check import check_kda, reference_for
from bench.kda_half_report import EPS, F_A, HEAD_DIM, HEADS, IN_PROJ_ROWS, LOWER_BOUND, NBLOCKS, PROJECTION
from bench.kda_inputs import KdaInputs, as_numpy
from bench.peers.vllm_shims import StockKernels
from bench.tables.kda_half import Layer, Unfused

# in_proj's column blocks as kda.py splits them: q | k | v, g2, f_a, beta, the pad to 16.
SPLIT = (3 * PROJECTION, PROJECTION, F_A, HEADS, IN_PROJ_ROWS - 4 * PROJECTION - F_A - HEADS)


class Stock(Unfused):
    """The stock half over the unfused path's layer copies and step metadata."""

    def __init__(self, kernels: StockKernels, requests: int, q: int, device: str, l2: int, seed: int = 11):
        super().__init__(requests, q, device, l2, seed)
        self.k = kernels
        self.norms = []
        for layer in self.layers:
            norm = kernels.FusedRMSNormGated(HEAD_DIM, eps=EPS, activation="sigmoid", device=device,
                                             dtype=torch.bfloat16)
            with torch.no_grad():
                norm.weight.copy_(layer.o_norm)
            self.norms.append(norm)
        self.poisoned = False  # the check's step fills the tensors it allocates with NaN
        self.snapshot: dict[str, torch.Tensor] = {}

    def _empty(self, *shape: int, like: torch.Tensor | None = None) -> torch.Tensor:
        made = torch.empty_like(like) if like is not None else torch.empty(
            *shape, dtype=torch.bfloat16, device=self.state_indices.device)
        return made.fill_(float("nan")) if self.poisoned else made

    def step(self, i: int) -> None:
        layer, t, k = self.layers[i], self.t, self.k
        x = k.attn_res(layer.prefix, layer.delta, layer.blocks, layer.ares_norm, layer.ares_proj, layer.in_norm,
                       num_blocks=NBLOCKS, block_write_idx=-1, eps=EPS, output_norm_eps=EPS)
        projected = F.linear(x, layer.w_in)
        mixed_qkv, g_proj, f_a, beta = projected.split(SPLIT, dim=-1)[:4]
        g1 = F.linear(f_a, layer.w_fb)
        beta = beta.unsqueeze(0)
        g1 = g1.view(1, t, HEADS, HEAD_DIM)
        g2 = g_proj.view(t, HEADS, HEAD_DIM)
        core = self._empty(1, t, HEADS, HEAD_DIM)
        conv = k.causal_conv1d_update(
            mixed_qkv, layer.conv_state.transpose(-1, -2), layer.conv_w, None, activation="silu",
            conv_state_indices=self.state_indices[:, 0], num_accepted_tokens=self.num_accepted,
            query_start_loc=self.query_start, max_query_len=self.q, validate_data=False,
            out=self._empty(like=mixed_qkv))
        q, kk, v = (part.view(1, t, HEADS, HEAD_DIM) for part in conv.split(PROJECTION, dim=-1))
        k.fused_recurrent_kda(q=q, k=kk, v=v, raw_g=g1, raw_beta=beta, A_log=layer.a_log, dt_bias=layer.dt_bias,
                              lower_bound=LOWER_BOUND, initial_state=layer.state, cu_seqlens=self.query_start,
                              ssm_state_indices=self.state_indices, num_accepted_tokens=self.num_accepted,
                              out=core[:, :t])
        if self.poisoned:
            self.snapshot = {"o": core[0].clone(), "conv": conv, "g1": g1, "beta": beta, "projected": projected}
        core.copy_(self.norms[i](core, g2))
        out = F.linear(core.view(t, PROJECTION), layer.w_o)
        self.x, self.proj, self.stock_core, self.stock_out = x, projected, core, out

    # The check's views of this chain (bench/tables/kda_half.py's Unfused._check).
    def poison(self, layer: Layer) -> None:
        self.poisoned = True

    def conv_out(self) -> torch.Tensor:
        return self.snapshot["conv"].view(self.t, 3, PROJECTION).transpose(0, 1)

    def rec_out(self) -> torch.Tensor:
        return self.snapshot["o"]

    def core_out(self) -> torch.Tensor:
        return self.stock_core.view(self.t, PROJECTION)

    def layer_out(self, layer: Layer) -> torch.Tensor:
        return self.stock_out

    def kda_inputs(self, layer: Layer, state: torch.Tensor | None = None) -> KdaInputs:
        s = self.snapshot
        q, k, v = (part.view(self.t, HEADS, HEAD_DIM) for part in s["conv"].split(PROJECTION, dim=-1))
        return KdaInputs(q=q, k=k, v=v, g=s["g1"].view(self.t, HEADS, HEAD_DIM), beta=s["beta"][0],
                         a_log=layer.a_log, dt_bias=layer.dt_bias, state=layer.state if state is None else state,
                         state_indices=self.state_indices, num_accepted=self.num_accepted,
                         query_start=self.query_start, valid=self.requests)

    def check(self) -> str:
        text = super().check()
        self.poisoned = False
        if text.startswith("ok") and self.requests >= 2:
            padded = self.check_padded()
            text = text + ", " + padded[3:] if padded.startswith("ok") else "FAIL " + padded
        self.snapshot = {}
        return text

    def check_padded(self) -> str:
        """The last request padded (slot 0 in every column, one accepted token): slot 0 of the conv
        and recurrent states untouched, the real requests' recurrence rows against float64."""
        keep = (self.state_indices.clone(), self.num_accepted.clone())
        try:
            layer = self.layers[0]
            self.state_indices[-1] = 0
            self.num_accepted[-1] = 1
            conv0, state0 = layer.conv_state[0].clone(), layer.state[0].clone()
            before = layer.state.clone()
            self.poisoned = True
            self.step(0)
            if layer.out.is_cuda:
                torch.cuda.synchronize()
            inputs = self.kda_inputs(layer, state=before)
            inputs.valid = self.requests - 1
            kda = check_kda("fla", inputs, self.snapshot["o"], layer.state, reference_for(inputs), as_numpy(before))
            problems = [] if kda.ok else [f"rec {kda.summary()}"]
            if not torch.equal(layer.conv_state[0], conv0):
                problems.append("the conv update wrote slot 0 (NULL_BLOCK_ID)")
            if not torch.equal(layer.state[0], state0):
                problems.append("the recurrence wrote slot 0")
            if problems:
                return "padded: " + "; ".join(problems)
            return f"ok padded: slot 0 untouched, rec o {kda.output_error:.1e}"
        except Exception as err:  # noqa: BLE001 (reported as the check's failure)
            return f"padded check raised {type(err).__name__}: {err}"[:300]
        finally:
            self.poisoned = False
            self.state_indices.copy_(keep[0])
            self.num_accepted.copy_(keep[1])
