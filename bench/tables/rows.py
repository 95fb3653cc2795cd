"""Row kernels: fused RMSNorm (rows 4..64 x 7168) and row softmax (8192 x 4096), against Triton.

Bytes: x read once and y written once (bf16), plus the RMSNorm weight (bf16 [hidden]).
"""

from __future__ import annotations

import torch

from bench.measure import Context, compare, measure_row
from bench.peers import triton_rows
from bench.report import OURS, Row
from bench.timing import copies_for

RMS_ROWS = (4, 8, 16, 32, 64)
RMS_HIDDEN = 7168
SOFTMAX_SHAPE = (8192, 4096)
TOLERANCE = 1e-2
KERNELS = {
    **{f"rmsnorm_rows{r}_h{RMS_HIDDEN}": "x, w, y (ptr<bf16>), rows, hidden, eps (f32, 1e-6)" for r in RMS_ROWS},
    f"softmax_rows{SOFTMAX_SHAPE[0]}_cols{SOFTMAX_SHAPE[1]}": "x, y (ptr<bf16>), rows, cols",
}


def _measure(ctx: Context, table: str, shape: str, kernel: str, nbytes: int, inputs: list[dict],
             out_shape: tuple[int, ...], peer, reference: torch.Tensor, ours_extra: dict) -> Row:
    """Shared by both kernels: inputs[i] holds the named input tensors of copy i."""
    copies = len(inputs)
    op, status = ctx.ours(kernel)
    ours = {OURS: op} if op else {}
    variants = ctx.variants(kernel)
    ours.update({name: v_op for name, (v_op, _) in variants.items() if v_op is not None})
    absent = {name: v_status for name, (v_op, v_status) in variants.items() if v_op is None}
    names = [*ours, "triton"]
    ys = {name: [torch.empty(out_shape, dtype=torch.bfloat16, device=ctx.device) for _ in range(copies)] for name in names}
    steps = {}
    for name, kernel_op in ours.items():
        values = [dict(inputs[i], y=ys[name][i], **ours_extra) for i in range(copies)]
        steps[name] = lambda i, kernel_op=kernel_op, values=values: kernel_op(values[i])
    steps["triton"] = lambda i: peer(inputs[i], ys["triton"][i])

    def check(name: str, after: bool) -> str:
        if not after:
            ys[name][0].fill_(float("nan"))
            steps[name](0)
        return compare(ys[name][0], reference, TOLERANCE)

    return measure_row(ctx, table, shape, nbytes, copies, steps, check, ours_status=None if op else status,
                       absent=absent)


def _rmsnorm_rows(ctx: Context) -> list[Row]:
    rows = []
    for r in ctx.shapes.get("rmsnorm", RMS_ROWS):
        hidden = ctx.shapes.get("rmsnorm_hidden", RMS_HIDDEN)
        nbytes = 2 * (2 * r * hidden + hidden)
        copies = copies_for(nbytes, ctx.l2_bytes())
        inputs = [
            {"x": torch.randn(r, hidden, device=ctx.device).to(torch.bfloat16),
             "w": (1 + 0.1 * torch.randn(hidden, device=ctx.device)).to(torch.bfloat16)}
            for _ in range(copies)
        ]
        reference = triton_rows.rmsnorm_reference(inputs[0]["x"], inputs[0]["w"])
        rows.append(_measure(
            ctx, "rmsnorm", f"rows={r} hidden={hidden}", f"rmsnorm_rows{r}_h{hidden}", nbytes, inputs, (r, hidden),
            lambda a, y: triton_rows.rmsnorm(a["x"], a["w"], y), reference,
            {"rows": r, "hidden": hidden, "eps": triton_rows.RMS_EPS},
        ))
    return rows


def _softmax_rows(ctx: Context) -> list[Row]:
    r, cols = ctx.shapes.get("softmax", SOFTMAX_SHAPE)
    nbytes = 2 * 2 * r * cols
    copies = copies_for(nbytes, ctx.l2_bytes())
    inputs = [{"x": (4 * torch.randn(r, cols, device=ctx.device)).to(torch.bfloat16)} for _ in range(copies)]
    reference = triton_rows.softmax_reference(inputs[0]["x"])
    return [_measure(
        ctx, "softmax", f"rows={r} cols={cols}", f"softmax_rows{r}_cols{cols}", nbytes, inputs, (r, cols),
        lambda a, y: triton_rows.softmax(a["x"], y), reference, {"rows": r, "cols": cols},
    )]


def run(ctx: Context) -> list[Row]:
    rows = _rmsnorm_rows(ctx) + _softmax_rows(ctx)
    if ctx.device.startswith("cuda"):
        torch.cuda.empty_cache()
    return rows
