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


def copy_bandwidth(nbytes: int = 1 << 30, repeats: int = DEFAULT_REPEATS) -> tuple[float, Timing]:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read plus bytes written.

    This is the HBM floor reference: a kernel that must move B bytes cannot take less than
    B / copy_bandwidth. One 1 GiB buffer is far past the L2, so no rotation is needed.
    """
    src = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    src.random_(0, 256)  # never time on zeros
    dst = torch.empty_like(src)
    timing = time_step(lambda i: dst.copy_(src), copies=1, launches=8, repeats=repeats)
    return 2.0 * nbytes / (timing.median_us * 1e-6), timing
