"""The routed experts of K3's latent MoE (k3_layer.md 5.3) as the peers run them, and their reference.

Weights are in the checkpoint's MXFP4 layout (k3_layer.md 1.3): w13 [E, 2 Ir, L/2] and w2 [E, L, Ir/2]
uint8, byte b of a row holding element 2b in its low nibble and 2b + 1 in its high one (e2m1: bit 3
the sign, bits 0..2 index {0, 0.5, 1, 1.5, 2, 3, 4, 6}); scales [E, rows, in/32] uint8 E8M0, the
value 2^(code - 127). Rows 0..Ir-1 of w13 are the gate (w1), Ir..2Ir-1 the up rows (w3).

Three forms of the same sum routed[t] = sum_i w_ti * W2_e (SiTU(W1_e lat_t, W3_e lat_t)), e = ids[t, i]:
  moe_reference: float64 (or float32) on the dequantized selected experts; the check's yardstick.
  DequantMoE: the unfused torch path: each (token, slot) pair gathers its expert's MXFP4 bytes and
    scales, dequantizes them to bf16 (exact: an e2m1 value times a power of two), and cuBLAS batched
    GEMMs (torch.bmm) do gemm1 and gemm2; SiTU and the weighted sum in torch.
  TritonKernelsMoE: OpenAI's triton_kernels (matmul_ogs, w4a16 on Hopper: MXFP4 weights in its
    Hopper value and scale layouts, bf16 activations), the package vLLM vendors for its Triton MXFP4
    MoE backends. Its routing data is built from our selection (the same experts and weights as
    every other path); gemm1 gathers the token rows per expert, SiTU runs in torch on its output
    (matmul_ogs fuses only its own activations, swiglu among them, not SiTU), gemm2 scatters and
    sums the 16 weighted rows of each token inside the kernel. It travels as a peer in .peers/
    (docs/bench.md); without it, or when it fails on this Triton, the peer says why.
"""

from __future__ import annotations

import importlib

import torch

# e2m1 code -> value (bit 3 the sign).
E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
MX_BLOCK = 32
SITU_BETA = 4.0
SITU_LINEAR_BETA = 25.0


def byte_table(dtype: torch.dtype, device) -> torch.Tensor:
    """[256, 2]: a packed byte's two values, the low nibble's first."""
    values = torch.tensor(E2M1, dtype=torch.float64)
    codes = torch.arange(256)
    return torch.stack((values[codes & 15], values[codes >> 4]), 1).to(dtype).to(device)


def scale_table(dtype: torch.dtype, device) -> torch.Tensor:
    """[256]: an E8M0 code's value 2^(code - 127); code 255 is NaN (MX)."""
    codes = torch.arange(256, dtype=torch.float64)
    values = torch.pow(2.0, codes - 127)
    values[255] = float("nan")
    return values.to(dtype).to(device)


def dequant_mxfp4(packed: torch.Tensor, scales: torch.Tensor, dtype: torch.dtype = torch.float32,
                  tables: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
    """[..., rows, in/2] uint8 and [..., rows, in/32] uint8 -> [..., rows, in] of dtype. In bf16 it is
    exact too (a value of at most 2 significant bits times a power of two), as long as the scale's
    power stays in bf16's range. `tables`: (byte_table, scale_table) of dtype on packed's device,
    made beforehand; without them they are made here, a host-to-device copy that a CUDA graph's
    capture refuses."""
    rows, half = packed.shape[-2:]
    if scales.shape[-1] * MX_BLOCK != 2 * half or scales.shape[:-1] != packed.shape[:-1]:
        raise ValueError(f"dequant_mxfp4: {tuple(packed.shape)} bytes need scales [..., {rows}, "
                         f"{2 * half // MX_BLOCK}], got {tuple(scales.shape)}")
    bytes_to_values, codes_to_scales = tables or (byte_table(dtype, packed.device), scale_table(dtype, packed.device))
    values = bytes_to_values[packed.to(torch.int32)]  # [..., rows, in/2, 2]
    values = values.reshape(*packed.shape[:-1], scales.shape[-1], MX_BLOCK)
    scale = codes_to_scales[scales.to(torch.int32)]
    return (values * scale.unsqueeze(-1)).reshape(*packed.shape[:-1], 2 * half)


def situ(g: torch.Tensor, u: torch.Tensor, beta: float = SITU_BETA, linear_beta: float = SITU_LINEAR_BETA):
    """k3_layer.md 5.3: [beta tanh(g / beta) sigmoid(g)] [lambda tanh(u / lambda)], in g's dtype."""
    return beta * torch.tanh(g / beta) * torch.sigmoid(g) * (linear_beta * torch.tanh(u / linear_beta))


def select_experts(logits: torch.Tensor, bias: torch.Tensor, top_k: int,
                   route: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """k3_layer.md 5.1 from f32 logits [T, E]: the top_k of sigmoid + correction bias, weights the
    pre-bias sigmoids renormalized. Returns ids [T, k] int64 (descending key) and f32 weights.
    With `route` [T, k] int64 (another run's selection, e.g. k2_bench's), the top-k still runs (the
    same launches) but its choice is replaced by `route`, whose weights are gathered instead."""
    scores = torch.sigmoid(logits.float())
    ids = torch.topk(scores + bias.float(), top_k, dim=-1).indices
    if route is not None:
        ids = route
    weights = scores.gather(1, ids)
    return ids, weights / weights.sum(-1, keepdim=True)


def moe_reference(lat: torch.Tensor, ids: torch.Tensor, weights: torch.Tensor, w13: torch.Tensor,
                  s13: torch.Tensor, w2: torch.Tensor, s2: torch.Tensor, dtype=torch.float64) -> torch.Tensor:
    """routed [T, L] in dtype, from the dequantized experts, every step in dtype."""
    x = lat.to(dtype)
    out = torch.zeros(x.shape[0], w2.shape[1], dtype=dtype, device=lat.device)
    rows = w13.shape[1] // 2
    for e in torch.unique(ids).tolist():
        token, slot = (ids == e).nonzero(as_tuple=True)
        w13_e = dequant_mxfp4(w13[e], s13[e], dtype)
        w2_e = dequant_mxfp4(w2[e], s2[e], dtype)
        gu = x[token] @ w13_e.t()
        h = situ(gu[:, :rows], gu[:, rows:])
        out.index_add_(0, token, (h @ w2_e.t()) * weights[token, slot].to(dtype).unsqueeze(1))
    return out


class DequantMoE:
    """The unfused MoE: per (token, slot) pair, its expert dequantized to bf16, then torch.bmm.

    Graph-safe (static shapes: T k pairs, whatever the experts), so an expert two tokens chose is
    dequantized twice: at K3's T = 4, 8, 16 the MoE table's route has 1.19-1.60x as many pairs as
    distinct experts (docs/perf.md)."""

    def __init__(self, w13: torch.Tensor, s13: torch.Tensor, w2: torch.Tensor, s2: torch.Tensor):
        self.w13, self.s13, self.w2, self.s2 = w13, s13, w2, s2
        self.rows = w13.shape[1] // 2
        # Made here, not per call: a call may be captured into a CUDA graph.
        self.tables = (byte_table(torch.bfloat16, w13.device), scale_table(torch.bfloat16, w13.device))

    def __call__(self, lat: torch.Tensor, ids: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        t, k = ids.shape
        flat = ids.reshape(-1)
        w13 = dequant_mxfp4(self.w13[flat], self.s13[flat], torch.bfloat16, self.tables)  # [P, 2 Ir, L]
        x = lat.unsqueeze(1).expand(t, k, lat.shape[1]).reshape(t * k, 1, lat.shape[1])
        gu = torch.bmm(x, w13.transpose(1, 2))  # [P, 1, 2 Ir] bf16, f32 accumulation
        del w13
        h = situ(gu[..., :self.rows].float(), gu[..., self.rows:].float()).to(torch.bfloat16)
        w2 = dequant_mxfp4(self.w2[flat], self.s2[flat], torch.bfloat16, self.tables)  # [P, L, Ir]
        y = torch.bmm(h, w2.transpose(1, 2)).view(t, k, -1)  # [T, k, L]
        return (y.float() * weights.float().unsqueeze(-1)).sum(1).to(torch.bfloat16)


def triton_kernels_version() -> str | None:
    """The triton_kernels API generation found (as vLLM tells them apart), or None."""
    try:
        importlib.import_module("triton_kernels")
    except Exception:  # noqa: BLE001 (absent or broken: the peer reports it)
        return None
    try:
        importlib.import_module("triton_kernels.matmul_ogs")
    except Exception:  # noqa: BLE001
        return "3.8+ (no matmul_ogs)"
    try:
        from triton_kernels.tensor import SparseMatrix  # noqa: F401
    except ImportError:
        return "3.5 (routing_from_bitmatrix)"
    return "3.6 (SparseMatrix)"


class TritonKernelsMoE:
    """triton_kernels' matmul_ogs over the MXFP4 experts (see the module's doc). Raises, with the
    reason, when the package is absent or its API is not the one written against (matmul_ogs with
    routing_from_bitmatrix: the generation vLLM 0.33 vendors)."""

    def __init__(self, w13: torch.Tensor, s13: torch.Tensor, w2: torch.Tensor, s2: torch.Tensor, num_warps: int = 8):
        try:
            self.ogs = importlib.import_module("triton_kernels.matmul_ogs")
            self.routing = importlib.import_module("triton_kernels.routing")
            self.tensor = importlib.import_module("triton_kernels.tensor")
            layout = importlib.import_module("triton_kernels.tensor_details.layout")
            opt_flags = importlib.import_module("triton_kernels.matmul_ogs_details.opt_flags")
            numerics = importlib.import_module("triton_kernels.numerics")
        except Exception as err:  # noqa: BLE001
            raise RuntimeError(f"triton_kernels not importable ({type(err).__name__}: {err}); "
                               "fill .peers/ (docs/bench.md)") from err
        if not hasattr(self.routing, "routing_from_bitmatrix"):
            raise RuntimeError(f"triton_kernels {triton_kernels_version()}: no routing_from_bitmatrix")
        self.experts = w13.shape[0]
        self.rows = w13.shape[1] // 2
        if torch.cuda.get_device_capability(w13.device)[0] == 9:
            # On sm_90 vLLM constrains matmul_ogs to split_k 1 for MXFP4 weights.
            opt_flags.update_opt_flags_constraints({"split_k": 1})
        value_layout, value_opts = layout.make_default_matmul_mxfp4_w_layout(mx_axis=1)
        scale_layout, scale_opts = layout.make_default_matmul_mxfp4_w_scale_layout(mx_axis=1, num_warps=num_warps)

        def prepare(packed: torch.Tensor, scales: torch.Tensor):
            # matmul_ogs takes W as [E, K, N] with K (the MX axis) on dim 1; its Hopper scale
            # layout wants the scale groups padded to a multiple of 4.
            scales = torch.nn.functional.pad(scales, (0, -scales.shape[-1] % 4))
            value = self.tensor.convert_layout(
                self.tensor.wrap_torch_tensor(packed.transpose(-2, -1), dtype=self.tensor.FP4), value_layout,
                **value_opts)
            scale = self.tensor.convert_layout(self.tensor.wrap_torch_tensor(scales.transpose(-2, -1)),
                                               scale_layout, **scale_opts)
            config = self.ogs.PrecisionConfig(weight_scale=scale,
                                              flex_ctx=self.ogs.FlexCtx(rhs_data=numerics.InFlexData()))
            return value, config

        self.w13, self.pc13 = prepare(w13, s13)
        self.w2, self.pc2 = prepare(w2, s2)
        self.words = (self.experts + 31) // 32

    def routing_data(self, ids: torch.Tensor, weights: torch.Tensor):
        """RoutingData, GatherIndx, ScatterIndx from our selection. The bitmatrix [T, words] (bit e
        of a row set when the row chose expert e) is packed in torch: the k bits of a row are
        distinct, so their sum is their OR."""
        t, k = ids.shape
        ids, order = torch.sort(ids, dim=1)  # each row's experts ascending, as its topk emits them
        weights = weights.gather(1, order)
        bits = torch.ones_like(ids) << (ids % 32)
        words = torch.zeros(t, self.words, dtype=torch.int64, device=ids.device)
        words.scatter_add_(1, ids // 32, bits)
        bitmatrix = self.tensor.Bitmatrix(words.to(torch.int32).view(torch.uint32), shape=[t, self.words * 32],
                                          shape_max=[t, None], scratchpad=None)
        return self.routing.routing_from_bitmatrix(bitmatrix, weights.to(torch.bfloat16), ids.to(torch.int16),
                                                   self.experts, k)

    def __call__(self, lat: torch.Tensor, ids: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        data, gather, scatter = self.routing_data(ids, weights)
        gu = self.ogs.matmul_ogs(lat, self.w13, None, data, gather_indx=gather, precision_config=self.pc13)
        h = situ(gu[..., :self.rows].float(), gu[..., self.rows:].float()).to(torch.bfloat16)
        y = self.ogs.matmul_ogs(h, self.w2, None, data, scatter_indx=scatter, precision_config=self.pc2,
                                gammas=data.gate_scal)
        return y.view(lat.shape[0], -1)
