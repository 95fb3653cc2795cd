"""Decode GEMV / small-M GEMM, y = x W^T (bf16, f32 accumulation), against cuBLAS and Triton.

Bytes: W [N, K] and x [M, K] read once, y [M, N] written once (bf16). The weights of one input copy
are evicted by the others before they are read again (timing.copies_for).
"""

from __future__ import annotations

import itertools

import torch

from bench.measure import Context, compare, measure_row
from bench.peers import torch_peers
from bench.peers.triton_linear import tuned_linear
from bench.report import OURS, Row
from bench.timing import copies_for

M_VALUES = (1, 4, 8, 16, 32, 64)
KN_VALUES = ((7168, 6288), (1536, 7168), (3584, 768), (2304, 12288))
TOLERANCE = 1e-2  # bf16 output
KERNELS = {
    f"gemv_m{m}_k{k}_n{n}": "x (ptr<bf16> [M, K]), w (ptr<bf16> [N, K]), y (ptr<bf16> [M, N]), M, N, K"
    for m, (k, n) in itertools.product(M_VALUES, KN_VALUES)
}


def shapes(ctx: Context) -> list[tuple[int, int, int]]:
    return ctx.shapes.get("gemv", [(m, k, n) for (k, n) in KN_VALUES for m in M_VALUES])


def _tuned_or_error(ctx: Context, x, w, y):
    """The tuned Triton peer, or a stand-in that raises the tuning error when called, so that the
    row records it against "triton" and goes on with the others."""
    try:
        return tuned_linear(x, w, y, quick=ctx.quick)
    except Exception as err:
        message = f"tuning the triton peer failed: {err}"

        def failed(*args):
            raise RuntimeError(message)

        return failed


def run(ctx: Context) -> list[Row]:
    rows = []
    for m, k, n in shapes(ctx):
        nbytes = 2 * (n * k + m * k + m * n)
        copies = copies_for(nbytes, ctx.l2_bytes())
        xs = [torch.randn(m, k, device=ctx.device).to(torch.bfloat16) for _ in range(copies)]
        ws = [(torch.randn(n, k, device=ctx.device) * k ** -0.5).to(torch.bfloat16) for _ in range(copies)]
        kernel = f"gemv_m{m}_k{k}_n{n}"
        op, status = ctx.ours(kernel)
        ours = {OURS: op} if op else {}
        variants = ctx.variants(kernel)
        ours.update({name: v_op for name, (v_op, _) in variants.items() if v_op is not None})
        absent = {name: v_status for name, (v_op, v_status) in variants.items() if v_op is None}
        names = [*ours, "cublas", "triton"]
        ys = {name: [torch.empty(m, n, dtype=torch.bfloat16, device=ctx.device) for _ in range(copies)] for name in names}
        triton_linear = _tuned_or_error(ctx, xs[0], ws[0], ys["triton"][0])
        steps = {}
        for name, kernel_op in ours.items():
            values = [{"x": xs[i], "w": ws[i], "y": ys[name][i], "M": m, "N": n, "K": k} for i in range(copies)]
            steps[name] = lambda i, kernel_op=kernel_op, values=values: kernel_op(values[i])
        steps["cublas"] = lambda i: torch_peers.cublas_linear(xs[i], ws[i], ys["cublas"][i])
        steps["triton"] = lambda i: triton_linear(xs[i], ws[i], ys["triton"][i])
        expected = torch_peers.reference_linear(xs[0], ws[0])

        def check(name: str, after: bool) -> str:
            if not after:
                ys[name][0].fill_(float("nan"))
                steps[name](0)
            return compare(ys[name][0], expected, TOLERANCE)

        shape = f"M={m} K={k} N={n}"
        c = getattr(triton_linear, "config", None)
        if c is not None:
            ctx.log(f"  {shape}: triton config block_n={c.block_n} block_k={c.block_k} split_k={c.split_k} "
                    f"warps={c.num_warps} stages={c.num_stages}")
        rows.append(measure_row(ctx, "gemv", shape, nbytes, copies, steps, check, flops=2 * m * n * k,
                                ours_status=None if op else status, absent=absent))
        if ctx.device.startswith("cuda"):
            torch.cuda.empty_cache()
    return rows
