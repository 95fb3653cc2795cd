"""GPU timing: CUDA events around CUDA-graph replays, median of repeats, inputs rotated past the L2.

Invariant: every implementation timed together gets the same number of launches per graph, the same
rotation over input copies, and its repeats interleaved with the others', so that clock and thermal
drift hit all of them alike. A time is per launch: a replay's elapsed time over its launch count.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Callable

import torch

# Working set per rotation cycle, as a multiple of the L2: at 2x, the copy a launch reads was
# evicted by the others since its last use (the H200's L2 is 60 MB; LRU-like replacement).
L2_FACTOR = 2.0
MAX_COPIES = 1024  # beyond this a graph gets long to capture; tiny inputs then stay partly in L2
MIN_LAUNCHES = 32  # per graph: amortizes the replay's own start-up (a few us)
DEFAULT_REPEATS = 9


@dataclass
class Timing:
    """One implementation's time per launch, in microseconds."""

    median_us: float
    min_us: float
    max_us: float
    launches: int  # per graph replay
    copies: int  # input sets rotated over
    samples_us: list[float] = field(default_factory=list)

    @property
    def spread(self) -> float:
        """(max - min) / median: a difference between implementations below this is noise."""
        return (self.max_us - self.min_us) / self.median_us if self.median_us > 0 else 0.0

    def as_dict(self) -> dict:
        return {
            "median_us": self.median_us,
            "min_us": self.min_us,
            "max_us": self.max_us,
            "spread": self.spread,
            "launches": self.launches,
            "copies": self.copies,
            "samples_us": self.samples_us,
        }


def l2_bytes() -> int:
    """The current device's L2 size (60 MB on the H200)."""
    return torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size


def copies_for(bytes_per_copy: int, l2: int, factor: float = L2_FACTOR, cap: int = MAX_COPIES) -> int:
    """Input copies to rotate over so that one cycle touches more than factor x L2.

    One copy always suffices when a single copy already exceeds factor x L2 (each launch then
    streams more than the cache holds).
    """
    if bytes_per_copy <= 0:
        raise ValueError(f"copies_for: bytes_per_copy must be positive, got {bytes_per_copy}")
    need = math.ceil(factor * l2 / bytes_per_copy)
    return max(1, min(cap, need))


def launches_for(copies: int, minimum: int = MIN_LAUNCHES) -> int:
    """Launches per graph: a whole number of rotation cycles, at least `minimum`."""
    cycles = max(1, math.ceil(minimum / copies))
    return cycles * copies


Step = Callable[[int], None]  # launches the work on input copy i (on the current stream)


def warm_up(step: Step, copies: int) -> None:
    """Runs every copy once outside capture: compiles, autotunes and creates handles first."""
    for i in range(copies):
        step(i)
    torch.cuda.synchronize()


def capture(step: Step, copies: int, launches: int) -> torch.cuda.CUDAGraph:
    """Captures `launches` calls of step, rotating over the copies, into one graph."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for j in range(launches):
            step(j % copies)
    torch.cuda.synchronize()
    return graph


def _replay_us(graph: torch.cuda.CUDAGraph, launches: int) -> float:
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) * 1000.0 / launches


def time_interleaved(
    steps: dict[str, Step], copies: int, launches: int | None = None, repeats: int = DEFAULT_REPEATS
) -> dict[str, Timing]:
    """Times each step over graph replays, their repeats interleaved; median per launch.

    The order of implementations rotates from one repeat to the next so that none always runs
    right after another's (cache and clock state carry over between replays).
    """
    if launches is None:
        launches = launches_for(copies)
    names = list(steps)
    for name in names:
        warm_up(steps[name], copies)
    graphs = {name: capture(steps[name], copies, launches) for name in names}
    for name in names:  # one untimed replay each: first-replay upload costs stay out
        graphs[name].replay()
    torch.cuda.synchronize()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for offset in range(len(names)):
            name = names[(r + offset) % len(names)]
            samples[name].append(_replay_us(graphs[name], launches))
    del graphs
    return {
        name: Timing(
            median_us=statistics.median(s),
            min_us=min(s),
            max_us=max(s),
            launches=launches,
            copies=copies,
            samples_us=s,
        )
        for name, s in samples.items()
    }


def time_step(step: Step, copies: int, launches: int | None = None, repeats: int = DEFAULT_REPEATS) -> Timing:
    """Times one implementation alone (see time_interleaved)."""
    return time_interleaved({"only": step}, copies, launches, repeats)["only"]


# The driver's device-to-device copy is recorded in a CUDA graph as a memcpy node, and a memcpy
# node of some sizes runs at about half the bandwidth the same copy reaches outside a graph (seen
# at 512 MiB, 1 GiB and 2 GiB, while 508 and 516 MiB run at full speed: pytorch/pytorch#191284; on
# the H200 a 1 GiB node read 2.71 TB/s where the same cudaMemcpyAsync outside a graph reads 4.2).
# So graph-captured copies are split into nodes of this size (a 64 MiB node ran at full speed on
# the H200), and the floor is measured outside any graph.
COPY_CHUNK_BYTES = 256 << 20


def chunked_copy(src: torch.Tensor, dst: torch.Tensor, chunk_bytes: int | None = None) -> None:
    """dst.copy_(src) as byte ranges of at most chunk_bytes (default COPY_CHUNK_BYTES) each: one
    memcpy node each in a graph."""
    chunk_bytes = chunk_bytes or COPY_CHUNK_BYTES
    src_bytes, dst_bytes = src.reshape(-1).view(torch.uint8), dst.reshape(-1).view(torch.uint8)
    if src_bytes.numel() != dst_bytes.numel():
        raise ValueError(f"chunked_copy: src has {src_bytes.numel()} bytes, dst {dst_bytes.numel()}")
    for start in range(0, src_bytes.numel(), chunk_bytes):
        dst_bytes[start:start + chunk_bytes].copy_(src_bytes[start:start + chunk_bytes])


def time_eager(step: Step, copies: int, launches: int, repeats: int = DEFAULT_REPEATS) -> Timing:
    """Times `launches` stream-ordered calls (no graph) between two events, per launch; median of
    repeats. For work whose launch cost is far below its run time (a 1 GiB copy: ~250 us), the
    host enqueues ahead of the device and the events see only device time."""
    warm_up(step, copies)
    samples = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        for j in range(launches):
            step(j % copies)
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1000.0 / launches)
    return Timing(statistics.median(samples), min(samples), max(samples), launches=launches, copies=copies,
                  samples_us=samples)


def copy_bandwidth(nbytes: int = 1 << 30, repeats: int = DEFAULT_REPEATS) -> tuple[float, Timing]:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read plus bytes written.

    This is the HBM floor reference: a kernel that must move B bytes cannot take less than
    B / copy_bandwidth. It is the driver's cudaMemcpyAsync of one 1 GiB buffer, stream-ordered
    outside any graph (the method of gpu_copy_bench; see COPY_CHUNK_BYTES for why not in a graph).
    One 1 GiB buffer is far past the L2, so no rotation is needed.
    """
    src, dst = _copy_buffers(nbytes)
    timing = time_eager(lambda i: dst.copy_(src), copies=1, launches=8, repeats=repeats)
    return 2.0 * nbytes / (timing.median_us * 1e-6), timing


def _copy_buffers(nbytes: int) -> tuple[torch.Tensor, torch.Tensor]:
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    src.random_(0, 256)  # never time on zeros
    return src, torch.empty_like(src)


def copy_bandwidth_methods(nbytes: int = 1 << 30, repeats: int = DEFAULT_REPEATS) -> dict[str, float]:
    """The same copy's bandwidth (bytes/s, read + written) by several methods, for the record:
    outside a graph, one graph memcpy node, and nodes of 256 MiB and 64 MiB. Their spread is what
    a harness that timed its floor inside a graph got wrong."""
    src, dst = _copy_buffers(nbytes)
    steps = {
        "eager": lambda i: dst.copy_(src),
        "graph, 1 node": lambda i: dst.copy_(src),
        "graph, 256 MiB nodes": lambda i: chunked_copy(src, dst, 256 << 20),
        "graph, 64 MiB nodes": lambda i: chunked_copy(src, dst, 64 << 20),
    }
    result = {"eager": 2.0 * nbytes / (time_eager(steps["eager"], 1, 8, repeats).median_us * 1e-6)}
    graphed = time_interleaved({k: v for k, v in steps.items() if k != "eager"}, copies=1, launches=8, repeats=repeats)
    for name, timing in graphed.items():
        result[name] = 2.0 * nbytes / (timing.median_us * 1e-6)
    return result
