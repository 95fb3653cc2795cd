"""Copy: our DSL copy kernel against the driver's device-to-device copy. Bytes: read + written.

Our kernel may declare src/dst as pointers to any element type: the byte buffers are viewed as it.
"""

from __future__ import annotations

import torch

from bench.measure import Context, measure_row
from bench.monotile_kernels import ELEMENT_DTYPES
from bench.peers import torch_peers
from bench.report import OURS, Row
from bench.timing import copies_for

SIZES = (64 << 20, 1 << 30)
KERNELS = {f"copy_bytes{n}": "src, dst (ptr<T>), n (elements of T), n_bytes" for n in SIZES}


def _ours_values(op, src: torch.Tensor, dst: torch.Tensor) -> dict:
    types = {p.name: p.pointee for p in op.params() if p.pointee}
    dtype = ELEMENT_DTYPES[types.get("src", "u8")]
    src_view, dst_view = src.view(dtype), dst.view(dtype)
    return {"src": src_view, "dst": dst_view, "n": src_view.numel(), "n_bytes": src.numel()}


def run(ctx: Context) -> list[Row]:
    rows = []
    for nbytes in ctx.shapes.get("copy", SIZES):
        copies = copies_for(2 * nbytes, ctx.l2_bytes())
        src = [torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device=ctx.device) for _ in range(copies)]
        names = ["memcpy"]
        op, status = ctx.ours(f"copy_bytes{nbytes}")
        if op is not None:
            names.insert(0, OURS)
        dst = {name: [torch.empty_like(s) for s in src] for name in names}
        steps = {"memcpy": lambda i: torch_peers.copy(src[i], dst["memcpy"][i])}
        if op is not None:
            values = [_ours_values(op, src[i], dst[OURS][i]) for i in range(copies)]
            steps = {OURS: lambda i: op(values[i]), **steps}

        def check(name: str, after: bool) -> str:
            if not after:
                dst[name][0].fill_(0xA5)  # poison: an unwritten byte shows
                steps[name](0)
            return "ok" if torch.equal(dst[name][0], src[0]) else "FAIL bytes differ"

        rows.append(measure_row(ctx, "copy", f"{nbytes / (1 << 20):g} MiB", 2 * nbytes, copies, steps, check,
                                ours_status=None if op else status))
        if ctx.device.startswith("cuda"):
            torch.cuda.empty_cache()
    return rows
