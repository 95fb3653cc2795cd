"""A tiny tuner for the Triton peers: time a handful of candidate configs on the real inputs and
keep the fastest. Candidates come from a heuristic, so the first one is already a good default.

Invariant: tuning runs before graph capture (do_bench synchronizes and flushes the L2 between runs).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence


def pick_fastest(candidates: Sequence[Any], run_with: Callable[[Any], Callable[[], None]], quick: bool) -> Any:
    """Returns the candidate whose runner has the lowest median time; the first one when quick or
    when there is only one (no timing at all then)."""
    if quick or len(candidates) == 1:
        return candidates[0]
    import triton.testing

    best, best_ms = candidates[0], float("inf")
    for candidate in candidates:
        runner = run_with(candidate)
        ms = triton.testing.do_bench(runner, warmup=5, rep=25, return_mode="median")
        if ms < best_ms:
            best, best_ms = candidate, ms
    return best
