"""Run in a fresh process by the JIT table: times the first call of one kernel and prints JSON.

`triton`: the first call of the Triton RMSNorm (compile or cache load, then launch), with whatever
TRITON_CACHE_DIR the parent set (empty: cold; filled by an earlier probe: warm).
`ours DIR NAME`: loading our exported CUBIN from DIR and its first launch.
Imports (torch, triton) and CUDA context creation happen before the clock starts, in both.
"""

from __future__ import annotations

import json
import sys
import time

import torch


def _time_first_and_second(call) -> dict:
    torch.cuda.synchronize()
    start = time.perf_counter()
    call()
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    start = time.perf_counter()
    call()
    torch.cuda.synchronize()
    second = time.perf_counter() - start
    return {"first_call_ms": first * 1e3, "second_call_ms": second * 1e3}


def probe_triton(rows: int, hidden: int) -> dict:
    x = torch.randn(rows, hidden, device="cuda").to(torch.bfloat16)
    w = torch.randn(hidden, device="cuda").to(torch.bfloat16)
    y = torch.empty_like(x)

    from bench.peers import triton_rows  # importing triton is not compiling: outside the clock

    return _time_first_and_second(lambda: triton_rows.rmsnorm(x, w, y))


def probe_ours(directory: str, name: str, rows: int, hidden: int) -> dict:
    x = torch.randn(rows, hidden, device="cuda").to(torch.bfloat16)
    w = torch.randn(hidden, device="cuda").to(torch.bfloat16)
    y = torch.empty_like(x)
    values = {"x": x, "w": w, "y": y, "rows": rows, "hidden": hidden, "eps": 1e-6}
    state = {}

    def call():
        if "op" not in state:
            from bench.monotile_kernels import KernelDir

            state["op"] = KernelDir(directory).load(name)
        state["op"](values)

    return _time_first_and_second(call)


def main(argv: list[str]) -> int:
    torch.empty(1, device="cuda")  # context creation stays out of the numbers
    if argv[:1] == ["triton"]:
        result = probe_triton(int(argv[1]), int(argv[2]))
    elif argv[:1] == ["ours"]:
        result = probe_ours(argv[1], argv[2], int(argv[3]), int(argv[4]))
    else:
        print("usage: jit_probe.py triton ROWS HIDDEN | ours DIR NAME ROWS HIDDEN", file=sys.stderr)
        return 2
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
