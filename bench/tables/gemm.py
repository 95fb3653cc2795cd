"""Square bf16 GEMM on the matrix units, C = A W^T (4096^3), against cuBLAS and Triton.

Compute-bound: the row reports TFLOP/s (2 M N K flops); bytes are A, W read once and C written once.
"""

from __future__ import annotations

import torch

from bench.measure import Context, compare, measure_row
from bench.peers import torch_peers
from bench.peers.triton_matmul import matmul, tuned_matmul_config
from bench.report import OURS, Row
from bench.timing import copies_for

SHAPE = (4096, 4096, 4096)  # M, N, K
TOLERANCE = 1e-2
KERNELS = {"gemm_m4096_n4096_k4096": "a (ptr<bf16> [M, K]), b (ptr<bf16> [N, K]), c (ptr<bf16> [M, N]), M, N, K"}


def run(ctx: Context) -> list[Row]:
    m, n, k = ctx.shapes.get("gemm", SHAPE)
    nbytes = 2 * (m * k + n * k + m * n)
    copies = copies_for(nbytes, ctx.l2_bytes())
    a = [torch.randn(m, k, device=ctx.device).to(torch.bfloat16) for _ in range(copies)]
    w = [(torch.randn(n, k, device=ctx.device) * k ** -0.5).to(torch.bfloat16) for _ in range(copies)]
    kernel = f"gemm_m{m}_n{n}_k{k}"
    op, status = ctx.ours(kernel)
    # Our other configurations (tilings, stage counts, C's cache policy, the matrix instruction),
    # exported as <kernel>__<label> and timed on the same inputs beside ours.
    ours = {OURS: op} if op else {}
    variants = ctx.variants(kernel)
    ours.update({name: v_op for name, (v_op, _) in variants.items() if v_op is not None})
    absent = {name: v_status for name, (v_op, v_status) in variants.items() if v_op is None}
    names = [*ours, "cublas", "triton"]
    c = {name: [torch.empty(m, n, dtype=torch.bfloat16, device=ctx.device) for _ in range(copies)] for name in names}
    try:
        config = tuned_matmul_config(a[0], w[0], c["triton"][0], quick=ctx.quick)
        ctx.log(f"  gemm: triton config {config}")
        triton_step = lambda i: matmul(a[i], w[i], c["triton"][i], config)  # noqa: E731
    except Exception as err:  # recorded against "triton" when the row checks it
        message = f"tuning the triton peer failed: {err}"

        def triton_step(i):
            raise RuntimeError(message)

    steps = {
        "cublas": lambda i: torch_peers.cublas_linear(a[i], w[i], c["cublas"][i]),
        "triton": triton_step,
    }
    ours_steps = {}
    for name, kernel_op in ours.items():
        values = [{"a": a[i], "b": w[i], "c": c[name][i], "M": m, "N": n, "K": k} for i in range(copies)]
        ours_steps[name] = lambda i, kernel_op=kernel_op, values=values: kernel_op(values[i])
    steps = {**ours_steps, **steps}
    expected = torch_peers.reference_linear(a[0], w[0])

    def check(name: str, after: bool) -> str:
        if not after:
            c[name][0].fill_(float("nan"))
            steps[name](0)
        return compare(c[name][0], expected, TOLERANCE)

    row = measure_row(ctx, "gemm", f"M={m} N={n} K={k}", nbytes, copies, steps, check, flops=2 * m * n * k,
                      ours_status=None if op else status, absent=absent)
    if ctx.device.startswith("cuda"):
        torch.cuda.empty_cache()
    return [row]
