"""Copy: our DSL copy kernel against the driver's device-to-device copy. Bytes: read + written.

Our kernel may declare src/dst as pointers to any element type: the byte buffers are viewed as it.
The driver's copy is captured in pieces of at most timing.COPY_CHUNK_BYTES ("memcpy"), since one
graph memcpy node of 1 GiB runs at about half speed; that one node is reported too ("memcpy 1
node") where it differs, as the record of the driver's defect.
"""

from __future__ import annotations

import torch

from bench.measure import Context, measure_row
from bench.monotile_kernels import ELEMENT_DTYPES
from bench.peers import torch_peers
from bench.report import OURS, Row
from bench import timing
from bench.timing import copies_for

SIZES = (64 << 20, 1 << 30)
KERNELS = {f"copy_bytes{n}": "src, dst (ptr<T>), n (elements of T), n_bytes" for n in SIZES}
ONE_NODE = "memcpy 1 node"


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
        kernel = f"copy_bytes{nbytes}"
        op, status = ctx.ours(kernel)
        ours = ({OURS: op} if op is not None else {})
        variants = ctx.variants(kernel)
        ours.update({name: v_op for name, (v_op, _) in variants.items() if v_op is not None})
        absent = {name: v_status for name, (v_op, v_status) in variants.items() if v_op is None}
        peers = {"memcpy": torch_peers.copy}
        if nbytes > timing.COPY_CHUNK_BYTES:
            peers[ONE_NODE] = torch_peers.copy_one_node
        dst = {name: [torch.empty_like(s) for s in src] for name in [*ours, *peers]}
        steps = {}
        for name, kernel_op in ours.items():
            values = [_ours_values(kernel_op, src[i], dst[name][i]) for i in range(copies)]
            steps[name] = lambda i, kernel_op=kernel_op, values=values: kernel_op(values[i])
        for name, peer in peers.items():
            steps[name] = lambda i, peer=peer, name=name: peer(src[i], dst[name][i])

        def check(name: str, after: bool) -> str:
            if not after:
                dst[name][0].fill_(0xA5)  # poison: an unwritten byte shows
                steps[name](0)
            return "ok" if torch.equal(dst[name][0], src[0]) else "FAIL bytes differ"

        rows.append(measure_row(ctx, "copy", f"{nbytes / (1 << 20):g} MiB", 2 * nbytes, copies, steps, check,
                                ours_status=None if op else status, absent=absent))
        if ctx.device.startswith("cuda"):
            torch.cuda.empty_cache()
    return rows
