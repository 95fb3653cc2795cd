"""NCCL's all-reduce through torch.distributed, one process a GPU: the peer of K2's exchange
(`bench/allreduce.py`). With `cpu=True` the same code runs over gloo on the CPU, the harness's own
test, whose times are not a GPU's.

Per T, every rank's partial rows [T, H] bf16 come from a generator seeded by (rank, T), so every rank
can make every rank's rows: the all-reduce of them is checked against their float32 sum
(||out - ref|| / ||ref|| <= 1e-2, NaN or infinity fails) before anything is timed. Times are of a
loop of `chain` all-reduces in place on a [T, H] buffer of zeros (its values stay zero; NCCL's time
does not depend on them), between events on each rank after a barrier, over the count; a row's
time is the slowest rank's (the others wait for it inside the collective), the median over
`iterations` loops. On a GPU the same loop is also captured into one CUDA graph and its replays
timed alike, which takes the host's launch cost out of NCCL's number.
"""

from __future__ import annotations

import os
import socket
import statistics
import time
from dataclasses import dataclass, field

TOLERANCE = 1e-2


@dataclass
class NcclRow:
    tokens: int
    loop_us: float | None = None   # the median of the loops' per-all-reduce time
    graph_us: float | None = None  # the same loop as one CUDA graph (None on the CPU or when capture failed)
    check: str = ""                # "ok (rel 1.2e-03)" or "FAIL: ..."
    graph_note: str = ""           # why graph_us is missing


@dataclass
class NcclRun:
    backend: str
    version: str                   # NCCL's version, or gloo
    torch_version: str
    device: str
    rows: dict[int, NcclRow] = field(default_factory=dict)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def partial_rows(rank: int, tokens: int, hidden: int):
    """Rank `rank`'s partial rows at T = `tokens`: normal values, bf16, on the CPU."""
    import torch

    generator = torch.Generator().manual_seed(1000 * tokens + rank)
    return torch.randn(tokens, hidden, generator=generator).to(torch.bfloat16)


def check_reduced(out, inputs) -> str:
    """The all-reduce's output against the float32 sum of every rank's rows."""
    import torch

    ref = torch.stack([x.float() for x in inputs]).sum(0)
    got = out.float().cpu()
    if not torch.isfinite(got).all():
        return "FAIL: NaN or infinity in the output"
    rel = float((got - ref).norm() / ref.norm())
    return f"ok (rel {rel:.1e})" if rel <= TOLERANCE else f"FAIL: rel {rel:.3e} > {TOLERANCE}"


def run(ranks: int, tokens: list[int], hidden: int, iterations: int, chain: int, cpu: bool) -> NcclRun:
    """Spawns `ranks` processes (one a GPU, or gloo on the CPU) and returns rank 0's rows."""
    import torch.multiprocessing as mp

    context = mp.get_context("spawn")
    queue = context.SimpleQueue()
    port = free_port()
    mp.spawn(_worker, args=(ranks, port, tokens, hidden, iterations, chain, cpu, queue), nprocs=ranks, join=True)
    return queue.get()


def _timed_loops(dist, torch, device, cpu: bool, iterations: int, chain: int, body) -> list[float]:
    """Per-call microseconds of `iterations` loops of `chain` calls of `body`, the slowest rank's."""
    times = []
    for _ in range(iterations):
        dist.barrier()
        if cpu:
            start = time.perf_counter()
            for _ in range(chain):
                body()
            us = (time.perf_counter() - start) * 1e6 / chain
        else:
            torch.cuda.synchronize(device)
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            for _ in range(chain):
                body()
            end.record()
            end.synchronize()
            us = begin.elapsed_time(end) * 1e3 / chain
        slowest = torch.tensor([us], dtype=torch.float64, device=device)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        times.append(float(slowest.item()))
    return times


def _worker(rank, ranks, port, tokens, hidden, iterations, chain, cpu, queue):
    import torch
    import torch.distributed as dist

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    if cpu:
        device = torch.device("cpu")
        dist.init_process_group("gloo", rank=rank, world_size=ranks)
        result = NcclRun("gloo", "gloo", torch.__version__, "cpu")
    else:
        torch.cuda.set_device(rank)
        device = torch.device("cuda", rank)
        dist.init_process_group("nccl", rank=rank, world_size=ranks, device_id=device)
        version = ".".join(str(v) for v in torch.cuda.nccl.version())
        result = NcclRun("nccl", version, torch.__version__, torch.cuda.get_device_name(device))
    try:
        for t in tokens:
            row = NcclRow(tokens=t)
            inputs = [partial_rows(r, t, hidden) for r in range(ranks)]
            x = inputs[rank].to(device, copy=True)  # the reference keeps the rows as they were
            dist.all_reduce(x)
            row.check = check_reduced(x, inputs)
            zeros = torch.zeros(t, hidden, dtype=torch.bfloat16, device=device)
            for _ in range(3):
                dist.all_reduce(zeros)
            row.loop_us = statistics.median(
                _timed_loops(dist, torch, device, cpu, iterations, chain, lambda: dist.all_reduce(zeros)))
            if not cpu:
                try:
                    stream = torch.cuda.Stream(device)
                    stream.wait_stream(torch.cuda.current_stream(device))
                    with torch.cuda.stream(stream):
                        for _ in range(3):
                            dist.all_reduce(zeros)
                    torch.cuda.synchronize(device)
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph, stream=stream):
                        for _ in range(chain):
                            dist.all_reduce(zeros)
                    graph.replay()
                    torch.cuda.synchronize(device)
                    # One replay runs the chain: its time over the count is per all-reduce.
                    row.graph_us = statistics.median(
                        _timed_loops(dist, torch, device, cpu, iterations, 1, graph.replay)) / chain
                except Exception as error:  # noqa: BLE001 - reported in the table, the run goes on
                    row.graph_note = f"{type(error).__name__}: {error}".splitlines()[0]
            result.rows[t] = row
        if rank == 0:
            queue.put(result)
    finally:
        dist.destroy_process_group()
